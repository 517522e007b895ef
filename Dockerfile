# The image of every Arena service in docker-compose.yml: the API, the workers and beat; built with
# EXTRAS="[train]" for the training workers (PyTorch). An editable install keeps the source tree,
# where the web pages (frontend/) and the zoo live.
FROM python:3.11-slim
ARG EXTRAS=""

# One single-threaded process per core (ARCHITECTURE §8); no ONNX Runtime telemetry files.
ENV PYTHONUNBUFFERED=1 \
    ORT_DISABLE_TELEMETRY=1 \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1

WORKDIR /srv/arena/app
COPY pyproject.toml README.md ./
COPY games games
COPY bots bots
COPY workers workers
COPY platform platform
COPY frontend frontend
RUN pip install --no-cache-dir -e ".${EXTRAS}"

RUN useradd --create-home arena && mkdir -p /srv/arena/blobs /srv/arena/data \
    && chown -R arena /srv/arena/blobs /srv/arena/data
USER arena
CMD ["arena", "serve"]
