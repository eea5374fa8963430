"""Running without AWS: a local moto server (``server``), its IAM enforcement (``iam``), an
embedded stack of server, worker and beat in one process (``embedded``), and the demo."""
