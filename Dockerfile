# SpecDec Explorer — the hosted dashboard (see README.md, "Hosting").
#   docker build -t specdec-explorer .
#   docker run -p 8501:8501 -v specdec-data:/data specdec-explorer
# tests/test_hosting.py parses this file and runs its install, start and health-check commands.
FROM python:3.11.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    EXPLORER_DATA_DIR=/data \
    STREAMLIT_SERVER_ADDRESS=0.0.0.0 \
    STREAMLIT_SERVER_PORT=8501 \
    STREAMLIT_SERVER_HEADLESS=true \
    STREAMLIT_SERVER_FILE_WATCHER_TYPE=none \
    STREAMLIT_BROWSER_GATHER_USAGE_STATS=false \
    STREAMLIT_CLIENT_SHOW_ERROR_DETAILS=type

WORKDIR /app

# PNG/SVG chart export renders in Chromium (kaleido). Without it the Export tab says so and
# offers HTML; `docker build --build-arg WITH_CHROMIUM=true .` adds Debian's chromium (~300 MB).
ARG WITH_CHROMIUM=false
RUN if [ "$WITH_CHROMIUM" = "true" ]; then \
        apt-get update && apt-get install -y --no-install-recommends chromium \
        && rm -rf /var/lib/apt/lists/*; \
    fi

# Pinned runtime dependencies first, so code changes do not reinstall them.
COPY requirements.txt ./
RUN python -m pip install --no-cache-dir -r requirements.txt

# The code belongs to root and is read-only for the user the app runs as; only /data is writable.
COPY app.py ./
COPY .streamlit/ ./.streamlit/
COPY static/ ./static/
COPY data/ ./data/
COPY explorer/ ./explorer/
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/explorer \
        --shell /usr/sbin/nologin explorer \
    && mkdir -p /data \
    && chown 10001:10001 /data \
    && chmod -R go-w /app
USER 10001:10001

# The scenario database (SQLite) lives here unless EXPLORER_DATABASE_URL points at PostgreSQL.
VOLUME ["/data"]
EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; base = os.environ.get('STREAMLIT_SERVER_BASE_URL_PATH', '').strip('/'); url = 'http://127.0.0.1:' + os.environ.get('STREAMLIT_SERVER_PORT', '8501') + ('/' + base if base else '') + '/_stcore/health'; raise SystemExit(0 if urllib.request.urlopen(url, timeout=4).read() == b'ok' else 1)"]

CMD ["python", "-m", "streamlit", "run", "app.py"]
