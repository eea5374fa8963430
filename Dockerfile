# One image for every process of the system: the local AWS emulator, init-aws,
# workers, beat and the hook endpoint (see docker-compose.yml and docs/aws.md).
#
# Two stages. `build` installs the dependencies and the package into a virtualenv;
# the image is the base, the distribution's libcurl and that virtualenv: no pip, no
# compiler, no caches.
FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore
# pycurl (kombu's SQS transport) is the one dependency compiled, against the distribution's
# libcurl and OpenSSL: its wheel carries its own copies (16 MB), which the distribution's
# security updates never reach. Every other dependency must come as a wheel (--only-binary).
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev libcurl4-openssl-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src

# The dependencies, read from pyproject.toml alone, so a change of code reuses this layer:
# the package's, the `http` extra's (uvicorn, the hook endpoint) and the `local` extra's
# emulator with the services the system uses (moto's DynamoDB, SQS and S3, and its server:
# flask). The extra itself (moto[server]) also brings the libraries of every other AWS
# service moto emulates (cfn-lint, sympy, networkx...: 160 MB that nothing here imports).
COPY pyproject.toml ./
RUN python -c "import tomllib; \
toml = tomllib.load(open('pyproject.toml', 'rb')); project = toml['project']; extras = project['optional-dependencies']; \
local = [r.replace('moto[server]', 'moto[dynamodb,s3,sqs]') for r in extras['local']]; \
print('\n'.join(project['dependencies'] + extras['http'] + local + ['flask', 'flask-cors'] + toml['build-system']['requires']))" \
    > requirements.txt \
    && python -m venv --without-pip /opt/venv \
    && pip --python /opt/venv/bin/python install --no-compile --only-binary=:all: --no-binary=pycurl -r requirements.txt

# The AWS services the stack uses, in the SDK (botocore's models) and in the emulator (moto's
# backends); the others are 38 MB of models and code that no process here loads. A step of
# yours that calls another service: add its botocore name, or --build-arg AWS_SERVICES=all.
ARG AWS_SERVICES="dynamodb dynamodbstreams s3 sqs sts iam events cloudwatch"
RUN cd /opt/venv/lib/python3.12/site-packages \
    && find botocore/data -name examples-1.json -delete \
    && if [ "$AWS_SERVICES" != all ]; then \
        keep=" $AWS_SERVICES core moto_api moto_server utilities s3bucket_path "; \
        for dir in botocore/data/*/ moto/*/; do \
            case "$keep" in *" $(basename "$dir") "*) ;; *) rm -r "$dir" ;; esac; \
        done; \
    fi

# The package (workflows, persistence, beat) itself, without its dependencies, built with the
# setuptools installed above (then removed); then the bytecode of the modules the processes
# import as they start (the rest is compiled when imported, in memory: the image's files
# belong to root and the processes run as nobody).
COPY README.md ./
COPY workflows ./workflows
COPY persistence ./persistence
COPY beat ./beat
RUN pip --python /opt/venv/bin/python install --no-deps --no-compile --no-build-isolation . \
    && pip --python /opt/venv/bin/python uninstall -y setuptools wheel \
    && /opt/venv/bin/python -c "import celery.bin.celery, celery.apps.worker, celery.apps.beat, \
celery.concurrency.prefork, kombu.transport.SQS, uvicorn.main, workflows.cli.commands, workflows.celery.app, \
workflows.http, persistence.store, beat.scheduler, workflows.local.server, moto.server, moto.dynamodb.models, \
moto.dynamodb.responses, moto.sqs.models, moto.sqs.responses, moto.s3.models, moto.s3.responses, moto.iam.models, \
moto.sts.models"

FROM python:3.12-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends libcurl4 \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/log/apt /var/log/dpkg.log
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# The example workflows, so the stack runs something out of the box; replace with your own modules.
COPY examples ./examples
ENV PATH=/opt/venv/bin:$PATH PYTHONPATH=/app PYTHONUNBUFFERED=1
USER nobody
ENTRYPOINT ["workflows"]
CMD ["worker"]
