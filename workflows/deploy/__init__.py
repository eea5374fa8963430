"""Deployment to AWS: one description of every table and queue, read by ``workflows init-aws``
(imperative provisioning) and by ``workflows aws template`` (a CloudFormation stack)."""
