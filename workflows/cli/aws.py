"""``workflows aws template|deploy``: the deployment as a CloudFormation stack."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Callable

EXIT_USAGE = 2


def _parameter(text: str) -> tuple[str, str]:
    """An argparse type: ``KEY=VALUE``."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def _extra_queues() -> list[str]:
    from .commands import _imports

    _imports()  # the step queues (queue=...) of the modules in WORKFLOWS_IMPORTS
    from ..celery.app import worker_queues

    return worker_queues()


def cmd_aws_template(args: argparse.Namespace) -> int:
    from ..deploy.template import build_template, render
    from ..settings import get_settings

    text = render(build_template(get_settings(), _extra_queues()))
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def cmd_aws_deploy(args: argparse.Namespace) -> int:
    from ..deploy.stack import deploy_stack
    from ..settings import get_settings
    from .commands import UsageError

    try:
        text = Path(args.template).read_text()
    except OSError as exc:
        raise UsageError(f"cannot read --template {args.template}: {exc.strerror}") from None
    settings = get_settings()
    result = deploy_stack(settings, args.stack_name, text, dict(args.parameter or []))
    print(f"stack {args.stack_name}: {result.action}")
    for key, value in sorted(result.outputs.items()):
        print(f"  {key:24} {value}")
    for output, variable, current in (("TablePrefix", "WORKFLOWS_TABLE_PREFIX", settings.table_prefix),
                                      ("QueuePrefix", "WORKFLOWS_QUEUE_PREFIX", settings.queue_prefix)):
        if output in result.outputs and result.outputs[output] != current:
            print(f"warning: the stack's {output} is {result.outputs[output]!r} but {variable} is {current!r}: "
                  f"set {variable}={result.outputs[output]} for every process", file=sys.stderr)
    return 0


def add_aws_commands(sub: Any, add: Callable[..., argparse.ArgumentParser]) -> None:
    """Add ``workflows aws ...`` to the command line."""
    aws = add("aws", lambda a: EXIT_USAGE, "the deployment as a CloudFormation stack").add_subparsers(
        dest="aws_cmd", required=True)
    p = add("template", cmd_aws_template,
            "print the CloudFormation template: every table, queue and one IAM policy per process", aws)
    p.add_argument("--output", "-o", help="write it to this file instead of standard output")
    p = add("deploy", cmd_aws_deploy, "create or update the stack from a template and wait until it is done", aws)
    p.add_argument("--stack-name", required=True)
    p.add_argument("--template", required=True, help="the file written by `workflows aws template`")
    p.add_argument("--parameter", action="append", type=_parameter, metavar="KEY=VALUE",
                   help="a template parameter (repeatable); others keep their previous or default values")
