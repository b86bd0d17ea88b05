"""Hosting: the Dockerfile, .dockerignore and .streamlit/config.toml.

No Docker engine runs on these machines, so the Dockerfile is parsed and checked instruction by
instruction, and then its own commands run: the build context it would see (after
.dockerignore) is copied to a temporary folder, its `pip install` runs in a fresh virtual
environment, its CMD serves the app there with its ENV, and its HEALTHCHECK command must pass.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.paths import ROOT
from tests.support.server import free_port, stop_server, wait_healthy

DOCKERFILE = ROOT / "Dockerfile"


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int

    @property
    def exec_form(self) -> list[str] | None:
        """The JSON array of an exec-form instruction, else None."""
        text = self.args
        if self.keyword == "HEALTHCHECK":
            text = self.args.split(" CMD ", 1)[1] if " CMD " in self.args else ""
        try:
            value = json.loads(text)
        except ValueError:
            return None
        return value if isinstance(value, list) and all(isinstance(v, str) for v in value) \
            else None


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined and comments dropped."""
    out: list[Instruction] = []
    buf, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if not buf:
            start = n
        if line.endswith("\\"):
            buf += line[:-1].strip() + " "
            continue
        buf += line
        keyword, _, args = buf.partition(" ")
        out.append(Instruction(keyword.upper(), args.strip(), start))
        buf = ""
    assert not buf, "the Dockerfile ends inside a continued line"
    return out


def env_of(instructions: list[Instruction]) -> dict[str, str]:
    env: dict[str, str] = {}
    for ins in instructions:
        if ins.keyword == "ENV":
            for item in shlex.split(ins.args):
                key, sep, value = item.partition("=")
                assert sep, f"line {ins.line}: write ENV as KEY=value"
                env[key] = value
    return env


def _glob_re(pattern: str) -> re.Pattern[str]:
    out = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            out += ".*"
            i += 2
        elif pattern[i] == "*":
            out += "[^/]*"
            i += 1
        elif pattern[i] == "?":
            out += "[^/]"
            i += 1
        else:
            out += re.escape(pattern[i])
            i += 1
    return re.compile(out + r"\Z")


def dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        include = line.startswith("!")
        pattern = os.path.normpath(line.lstrip("!").strip("/"))
        rules.append((include, _glob_re(pattern)))
    return rules


def in_context(rel: str, rules: list[tuple[bool, re.Pattern[str]]]) -> bool:
    """Docker's rule: the last pattern matching the path, or one of its parents, decides."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    keep = True
    for include, rx in rules:
        if any(rx.match(p) for p in prefixes):
            keep = include
    return keep


@pytest.fixture(scope="module")
def instructions() -> list[Instruction]:
    return parse_dockerfile(DOCKERFILE.read_text())


def test_dockerfile_structure(instructions: list[Instruction]):
    kw = [i.keyword for i in instructions]
    by = {k: [i for i in instructions if i.keyword == k] for k in set(kw)}
    print(f"\nDockerfile: {len(instructions)} instructions: {' '.join(kw)}")

    # A slim Python 3.11 base with a full version tag (no floating "latest").
    assert kw[0] == "FROM" and len(by["FROM"]) == 1
    assert re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?",
                        by["FROM"][0].args), by["FROM"][0].args

    # Pinned installs: pip only from requirements.txt, every requirement pinned with ==.
    runs = [i.args for i in by["RUN"]]
    pip_runs = [r for r in runs if "pip install" in r]
    assert pip_runs and all("-r requirements.txt" in r for r in pip_runs), pip_runs
    assert not any(re.search(r"pip install(?!.*-r requirements\.txt)", r) for r in runs)
    reqs = [ln.split("#")[0].strip() for ln in (ROOT / "requirements.txt").read_text()
            .splitlines()]
    reqs = [r for r in reqs if r]
    assert reqs and all(re.fullmatch(r"[A-Za-z0-9_.\[\],-]+==[A-Za-z0-9_.+-]+", r)
                        for r in reqs), reqs
    assert not any(re.search(r"\b(curl|wget)\b", r) for r in runs), "nothing is downloaded"

    # A non-root user that cannot write the code: the code is copied as root (no --chown),
    # made read-only for others, and USER comes after the last COPY/RUN.
    users = by["USER"]
    assert len(users) == 1
    user = users[0].args.split(":")[0]
    assert user not in ("root", "0"), user
    assert user.isdigit(), "a numeric UID lets Kubernetes verify runAsNonRoot"
    last_build = max(n for n, k in enumerate(kw) if k in ("COPY", "ADD", "RUN"))
    assert kw.index("USER") > last_build
    assert "ADD" not in kw
    for c in by["COPY"]:
        assert "--chown" not in c.args and "--chmod" not in c.args, c.args
    assert any("chmod -R go-w /app" in r for r in runs)
    assert any(re.search(rf"chown {user}(:\d+)? /data", r) for r in runs)

    # Headless, no usage statistics, port 8501, the scenario database on a volume.
    env = env_of(instructions)
    assert env["STREAMLIT_SERVER_HEADLESS"] == "true"
    assert env["STREAMLIT_BROWSER_GATHER_USAGE_STATS"] == "false"
    assert env["STREAMLIT_SERVER_PORT"] == "8501"
    assert env["STREAMLIT_SERVER_ADDRESS"] == "0.0.0.0"
    assert env["EXPLORER_DATA_DIR"] == "/data"
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["STREAMLIT_CLIENT_SHOW_ERROR_DETAILS"] in ("type", "none")  # no tracebacks
    assert by["EXPOSE"][0].args == "8501"
    assert by["VOLUME"][0].exec_form == ["/data"]
    assert by["WORKDIR"][0].args == "/app"

    # Exec-form CMD and HEALTHCHECK; the health check needs no curl.
    cmd = by["CMD"][-1].exec_form
    assert cmd and cmd[:4] == ["python", "-m", "streamlit", "run"] and cmd[4] == "app.py"
    hc = by["HEALTHCHECK"][0]
    assert re.search(r"--interval=\d+s", hc.args) and re.search(r"--timeout=\d+s", hc.args)
    probe = hc.exec_form
    assert probe and probe[:2] == ["python", "-c"], hc.args
    assert "urllib.request" in probe[2] and "/_stcore/health" in probe[2]
    assert "curl" not in hc.args and "wget" not in hc.args

    # Every COPY source exists and is in the build context.
    rules = dockerignore_rules()
    for c in by["COPY"]:
        *sources, _dest = shlex.split(c.args)
        for src in sources:
            path = ROOT / src
            assert path.exists(), src
            assert in_context(src.rstrip("/"), rules), f"{src} is excluded by .dockerignore"


def test_dockerignore_keeps_secrets_and_local_state_out():
    rules = dockerignore_rules()
    for rel in (".git/config", ".venv/bin/python", ".explorer-data/scenarios.sqlite3",
                "tests/test_app.py", "tests/artifacts/x.png", ".env", "deploy/compose.yaml",
                "explorer/__pycache__/store.cpython-311.pyc", ".hypothesis/x", "README.md"):
        assert not in_context(rel, rules), rel
    for rel in ("app.py", "requirements.txt", ".streamlit/config.toml",
                "explorer/interfaces/store.py",
                "explorer/ui/controls.py", "data/hardware.csv"):
        assert in_context(rel, rules), rel


def test_streamlit_config_has_production_defaults():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    server, browser = cfg["server"], cfg["browser"]
    assert server["headless"] is True
    assert server["fileWatcherType"] == "none"
    assert server["enableXsrfProtection"] is True
    assert server["enableCORS"] is True
    assert 0 < server["maxUploadSize"] <= 50
    assert browser["gatherUsageStats"] is False
    assert cfg["runner"]["postScriptGC"] is False  # a full collection per rerun: most of its CPU
    text = (ROOT / ".streamlit" / "config.toml").read_text()
    for var in ("EXPLORER_DATABASE_URL", "EXPLORER_DATA_DIR", "STREAMLIT_SERVER_BASE_URL_PATH"):
        assert var in text, var
    # Streamlit itself reads it from the working directory.
    out = subprocess.run([sys.executable, "-m", "streamlit", "config", "show"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, check=True).stdout
    assert re.search(r"^maxUploadSize = 50$", out, re.M), "config.toml was not read"
    assert re.search(r'^fileWatcherType = "none"$', out, re.M)


def test_readme_hosting_section_and_deploy_examples():
    readme = (ROOT / "README.md").read_text()
    assert "## Hosting" in readme
    section = readme.split("## Hosting", 1)[1]
    for needle in ("docker run", "sticky", "cookie", "PostgreSQL", "EXPLORER_DATABASE_URL",
                   "EXPLORER_DATA_DIR", "STREAMLIT_SERVER_BASE_URL_PATH", "deploy/"):
        assert needle in section, needle
    docs = {d["kind"]: d for d in yaml.safe_load_all((ROOT / "deploy" / "kubernetes.yaml")
                                                       .read_text())}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    assert docs["Deployment"]["spec"]["replicas"] >= 2
    assert pod["securityContext"]["runAsNonRoot"] is True
    (box,) = pod["containers"]
    assert box["securityContext"]["readOnlyRootFilesystem"] is True
    assert box["ports"][0]["containerPort"] == 8501
    env = {e["name"]: e for e in box["env"]}
    assert "secretKeyRef" in env["EXPLORER_DATABASE_URL"]["valueFrom"]
    assert "secretKeyRef" in env["STREAMLIT_SERVER_COOKIE_SECRET"]["valueFrom"]
    base = env["STREAMLIT_SERVER_BASE_URL_PATH"]["value"]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert box[probe]["httpGet"]["path"] == f"/{base}/_stcore/health"
    assert docs["Service"]["spec"]["sessionAffinity"] == "ClientIP"
    notes = docs["Ingress"]["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert notes["nginx.ingress.kubernetes.io/proxy-body-size"] == "50m"
    headers = docs["ConfigMap"]
    assert notes["nginx.ingress.kubernetes.io/custom-headers"] == (
        f"default/{headers['metadata']['name']}")
    assert headers["data"] == SECURITY_HEADERS

    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    services = compose["services"]
    assert services["explorer"]["volumes"] == ["scenarios:/data"]
    assert services["explorer"]["read_only"] is True
    for replica in ("explorer-a", "explorer-b"):
        env = services[replica]["environment"]
        assert env["EXPLORER_DATABASE_URL"].startswith("postgresql://")
        assert "STREAMLIT_SERVER_COOKIE_SECRET" in env
    nginx = (ROOT / "deploy" / "nginx.conf").read_text()
    assert "ip_hash;" in nginx and "Upgrade $http_upgrade" in nginx
    assert "client_max_body_size 50m" in nginx
    for name, value in SECURITY_HEADERS.items():  # on every response, errors included
        assert f'add_header {name} "{value}" always;' in nginx, name
    assert "Headers" in section and "frame-ancestors" in section and "Referer" in section


SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _copy_context(instructions: list[Instruction], dest: Path) -> None:
    """What the image's COPY instructions put in WORKDIR, filtered by .dockerignore."""
    rules = dockerignore_rules()
    for c in instructions:
        if c.keyword != "COPY":
            continue
        *sources, target = shlex.split(c.args)
        for src in sources:
            path = ROOT / src
            files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
            for f in files:
                rel = f.relative_to(ROOT).as_posix()
                if not in_context(rel, rules):
                    continue
                base = dest / target if target not in ("./", ".") else dest
                out = base / f.name if path.is_file() else base / f.relative_to(path)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, out)


def _snapshot(folder: Path) -> dict[str, float]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime
            for p in folder.rglob("*") if p.is_file()}


@pytest.mark.timeout(900)
def test_image_install_start_and_healthcheck_in_a_fresh_venv(instructions: list[Instruction],
                                                              tmp_path: Path):
    app = tmp_path / "app"
    app.mkdir()
    _copy_context(instructions, app)
    venv = tmp_path / "venv"
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")

    def image_command(words: list[str]) -> list[str]:
        return [py if w == "python" else w for w in words]

    # RUN pip install …: the same command with the venv's python (the image keeps no pip
    # cache; here the machine's cache saves the download).
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH",
                                                            "PYTHONHOME")}
    for ins in instructions:
        if ins.keyword == "RUN" and "pip install" in ins.args:
            words = [w for w in shlex.split(ins.args) if w != "--no-cache-dir"]
            pip = subprocess.run(image_command(words), cwd=app, timeout=600, env=env,
                                 capture_output=True, text=True)
            assert pip.returncode == 0, pip.stderr[-3000:]
    install_s = time.perf_counter() - t0
    frozen = subprocess.run([py, "-m", "pip", "freeze"], capture_output=True, text=True,
                            check=True).stdout.lower().split()
    for req in (ROOT / "requirements.txt").read_text().splitlines():
        req = req.split("#")[0].strip().lower()
        if req:
            name, _, version = req.partition("==")
            assert f"{name.replace('_', '-')}=={version}" in [f.replace("_", "-")
                                                              for f in frozen], req

    # The app renders in that environment from the copied context alone (AppTest, no browser).
    render = subprocess.run(
        [py, "-c", "from streamlit.testing.v1 import AppTest\n"
         "at = AppTest.from_file('app.py', default_timeout=120).run()\n"
         "assert not at.exception, [e.value for e in at.exception]\n"
         "print(next(m.value for m in at.markdown if m.value.startswith('Speedup')))"],
        cwd=app, capture_output=True, text=True, timeout=300,
        env={**env, "EXPLORER_DATA_DIR": str(tmp_path / "data-apptest")})
    assert render.returncode == 0, render.stderr[-3000:]
    assert "### " in render.stdout and "×" in render.stdout, render.stdout  # its headline

    # CMD with the image's ENV (on 127.0.0.1 and a free port here), then its HEALTHCHECK,
    # with and without a base path.
    image_env = env_of(instructions)
    cmd = image_command(next(i for i in reversed(instructions) if i.keyword == "CMD")
                        .exec_form or [])
    probe = image_command(next(i for i in instructions if i.keyword == "HEALTHCHECK")
                          .exec_form or [])
    before = _snapshot(app)
    for base_path in ("", "specdec"):
        port = free_port()
        run_env = {**env, **image_env, "STREAMLIT_SERVER_ADDRESS": "127.0.0.1",
                   "STREAMLIT_SERVER_PORT": str(port), "EXPLORER_DATA_DIR": str(tmp_path / "data"),
                   "HOME": str(tmp_path / "home")}
        if base_path:
            run_env["STREAMLIT_SERVER_BASE_URL_PATH"] = base_path
        log = tmp_path / f"serve-{base_path or 'root'}.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen(cmd, cwd=app, env=run_env, stdout=out,
                                    stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}" + (f"/{base_path}" if base_path else "")
            up_s = wait_healthy(url, 90, proc)
            check = subprocess.run(probe, env=run_env, capture_output=True, text=True,
                                   timeout=10)
            assert check.returncode == 0, check.stderr
            with urllib.request.urlopen(url + "/", timeout=10) as r:
                assert r.status == 200 and b"<html" in r.read().lower()
            bad = subprocess.run(probe, env={**run_env, "STREAMLIT_SERVER_PORT": str(free_port())},
                                 capture_output=True, text=True, timeout=10)
            assert bad.returncode != 0, "the health check must fail when nothing answers"
        finally:
            stop_server(proc)
        print(f"\nimage commands: pip install into a fresh venv {install_s:.0f} s; "
              f"server healthy after {up_s:.1f} s (base path '{base_path}'); health check ok")
    assert _snapshot(app) == before, "the app wrote into its code folder"
    assert "Traceback" not in log.read_text(errors="replace")
