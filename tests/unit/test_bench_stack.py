"""The bench's process handling: CPU of a process tree (prefork pools), pausing a system (bench/stack.py)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from bench.stack import Cluster, cpu_seconds, descendants, tree_cpu_seconds
from tests.waiting import wait_for

pytestmark = pytest.mark.e2e

BURN_THEN_SLEEP = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass\ntime.sleep(30)"


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stop(cluster: Cluster, children: list[int]) -> None:
    """Stop the cluster, then the children it started (plain processes do not end their children)."""
    cluster.stop()
    for pid in children:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_parents_cpu_counts_its_childrens(tmp_path: Path) -> None:
    """A prefork worker's tasks run in its children: their CPU is the worker's."""
    cluster = Cluster(tmp_path)
    code = (f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {BURN_THEN_SLEEP!r}])\n"
            "time.sleep(30)")
    proc = cluster.start("parent", [sys.executable, "-c", code], {})
    children: list[int] = []
    try:
        wait_for(lambda: tree_cpu_seconds(proc.popen.pid) - cpu_seconds(proc.popen.pid) >= 0.25, 20, poll=0.1,
                 what="the child's CPU shows in the tree's")
        children = descendants(proc.popen.pid)
        assert len(children) == 1
    finally:
        stop(cluster, children or descendants(proc.popen.pid))


def test_a_paused_system_is_stopped_with_its_children_until_resumed(tmp_path: Path) -> None:
    cluster = Cluster(tmp_path)
    code = "import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n" \
           "time.sleep(30)"
    proc = cluster.start("parent", [sys.executable, "-c", code], {})
    pids: list[int] = []
    try:
        wait_for(lambda: descendants(proc.popen.pid), 20, what="the child starts")
        pids = [proc.popen.pid, *descendants(proc.popen.pid)]
        cluster.pause()
        wait_for(lambda: [state(p) for p in pids] == ["T", "T"], 10, what="both stopped")
        cluster.resume()
        wait_for(lambda: [state(p) for p in pids] == ["S", "S"], 10, what="both sleeping again")
        cluster.pause()
    finally:
        stop(cluster, pids[1:])  # a paused process is resumed so that SIGTERM ends it
    assert not proc.alive()


def test_the_front_empties_a_systems_growing_tables_and_counts_items(tmp_path: Path) -> None:
    import boto3

    from bench.stack import CREDENTIALS, Front

    front = Front(tmp_path)
    try:
        client = boto3.client("dynamodb", endpoint_url=front.url, region_name="us-east-1",
                              aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                              aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])
        for name in ("sys-runs", "sys-schedules"):
            client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                                KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                                AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
            for i in range(3):
                client.put_item(TableName=name, Item={"pk": {"S": f"k{i}"}})
        from bench.proxy import table_items

        assert table_items(front.url) == {"sys-runs": 3, "sys-schedules": 3}
        assert front.clear("sys", ("runs", "missing")) == {"sys-runs": 3}
        assert table_items(front.url) == {"sys-runs": 0, "sys-schedules": 3}  # a kept table keeps its items
        client.put_item(TableName="sys-runs", Item={"pk": {"S": "again"}})  # the emptied table still works
        assert client.get_item(TableName="sys-runs", Key={"pk": {"S": "again"}})["Item"]["pk"] == {"S": "again"}
    finally:
        front.stop()
