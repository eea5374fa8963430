# One image for every process of the system: the local AWS emulator, init-aws,
# workers, beat and the hook endpoint (see docker-compose.yml and docs/aws.md).
FROM python:3.12-slim

# kombu's SQS transport needs pycurl; where no wheel fits, pip builds it from libcurl.
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev libcurl4-openssl-dev libssl-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY workflows ./workflows
COPY persistence ./persistence
COPY beat ./beat
# The example workflows, so the stack runs something out of the box; replace with your own modules.
COPY examples ./examples
RUN pip install --no-cache-dir '.[local,http]'

ENV PYTHONPATH=/app PYTHONUNBUFFERED=1
USER nobody
ENTRYPOINT ["workflows"]
CMD ["worker"]
