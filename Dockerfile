# The image of every Arena service in docker-compose.yml: the API, the workers and beat; built with
# EXTRAS="[train]" for the training workers (PyTorch). An editable install keeps the source tree,
# where the web pages (frontend/) and the zoo live.
FROM python:3.11-slim
ARG EXTRAS=""

# One single-threaded process per core (ARCHITECTURE §8); no ONNX Runtime telemetry files.
ENV PYTHONUNBUFFERED=1 \
    ORT_DISABLE_TELEMETRY=1 \
    OPENBLAS_NUM_THREADS=1 \
    OMP_NUM_THREADS=1 \
    NUMBA_CACHE_DIR=/srv/arena/numba-cache

WORKDIR /srv/arena/app
COPY pyproject.toml README.md ./
COPY games games
COPY bots bots
COPY workers workers
COPY platform platform
COPY frontend frontend
RUN pip install --no-cache-dir -e ".${EXTRAS}"

RUN useradd --create-home arena && mkdir -p /srv/arena/blobs /srv/arena/data /srv/arena/numba-cache \
    && chown -R arena /srv/arena/blobs /srv/arena/data /srv/arena/numba-cache
USER arena
# The compiled kernels go into Numba's cache now, once, rather than into every container's first
# moves (ARCHITECTURE §9). The cache is keyed by the CPU: on a host whose CPU differs from the
# builder's, a process compiles what it uses once more, as `arena warm` does in the workers at start.
RUN arena warm
CMD ["arena", "serve"]
