# probewatch service image: the web service, scheduler and workers. Test runs happen
# on runners (local, Docker with GPUs, or self-hosted GitHub Actions), not in here,
# so this image carries no torch.
FROM python:3.11-slim

RUN apt-get update \
    && apt-get install --yes --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --create-home --uid 10001 probewatch

WORKDIR /opt/probewatch
COPY pyproject.toml README.md ./
COPY probewatch ./probewatch
COPY bot ./bot
COPY pr_miner ./pr_miner
COPY probe_builder ./probe_builder
COPY runners ./runners
COPY task_registry ./task_registry
COPY gh_actions ./gh_actions
RUN pip install --no-cache-dir .

USER probewatch
ENV PROBEWATCH_HOME=/home/probewatch/.probewatch \
    PYTHONUNBUFFERED=1
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/healthz', timeout=4)"

CMD ["probewatch", "serve", "--host", "0.0.0.0", "--port", "8080"]
