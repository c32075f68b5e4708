"""The container files of deploy/ hold together: the Dockerfile installs the package's base
(slim) requirements from a build context cut to the package, runs `lttw serve` as a non-root
user with options the command accepts and a HEALTHCHECK on GET /live that its Host allow list
lets through; the Kubernetes Deployment probes GET /live and GET /ready with a Host header
the server allows, on the container's port, and its Service and HorizontalPodAutoscaler point
at it. deploy/serve_check.py (CI) runs the same install and command for real."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from typer.main import get_command

from lttw.cli import app
from lttw.cli.serve import check_allowed_host
from lttw.serving.security import LOOPBACK_HOSTS, host_allowed

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def _serve_check():
    spec = importlib.util.spec_from_file_location("serve_check", DEPLOY / "serve_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _serve_check()


def serve_params(args: list[str]) -> dict:
    """``lttw serve ARGS`` parsed by the CLI itself (an unknown option or bad value raises),
    its allowed hosts checked as the command checks them."""
    command = get_command(app).commands["serve"]
    params = command.make_context("serve", list(args)).params
    for name in params["allowed_host"] or ():
        check_allowed_host(name)
    return params


def test_the_image_installs_the_package_and_serves_as_a_non_root_user():
    found = check.instructions()
    assert found["FROM"].startswith("python:3.")
    assert found["USER"] not in ("root", "0")
    # `pip install .`: the base requirements, at the pinned versions
    assert re.search(r"pip install (-c \S+ )?/tmp/lttw-src( |$)", found["RUN"]), found["RUN"]
    argv = check.exec_form(found["ENTRYPOINT"]) + check.exec_form(found["CMD"])
    assert argv[:2] == ["lttw", "serve"]
    params = serve_params(argv[2:])
    assert str(params["model"]) == "/model" and params["port"] == 8000
    assert params["host"] == "0.0.0.0"
    assert f"{params['port']}" in found["EXPOSE"]
    health = check.exec_form(found["HEALTHCHECK"])
    url = next(word for part in health for word in part.split("'") if word.startswith("http"))
    parts = urlsplit(url)
    assert parts.path == "/live" and parts.port == params["port"]
    assert host_allowed(parts.netloc, tuple(params["allowed_host"]))


def test_the_build_context_is_the_package():
    names = check.context_names()
    assert {"pyproject.toml", "README.md", "src"} <= set(names)
    assert all((REPO / name).exists() for name in names)
    lines = (DEPLOY / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    assert "*" in lines  # everything else is left out


def _manifests() -> dict[str, dict]:
    docs = yaml.safe_load_all((DEPLOY / "k8s" / "lttw-serve.yaml").read_text(encoding="utf-8"))
    return {doc["kind"]: doc for doc in docs}


def test_kubernetes_probes_pass_the_host_allow_list():
    docs = _manifests()
    assert set(docs) == {"Deployment", "Service", "NetworkPolicy", "HorizontalPodAutoscaler"}
    pod = docs["Deployment"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    params = serve_params(container["args"])
    allowed = tuple(params["allowed_host"] or LOOPBACK_HOSTS)
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    probes = {
        k: container[k]["httpGet"] for k in ("livenessProbe", "readinessProbe", "startupProbe")
    }
    assert probes["livenessProbe"]["path"] == "/live"
    assert probes["readinessProbe"]["path"] == "/ready"
    for probe in probes.values():
        assert ports[probe["port"]] == params["port"]
        hosts = [h["value"] for h in probe.get("httpHeaders", []) if h["name"].lower() == "host"]
        assert hosts and host_allowed(hosts[0], allowed), (probe, allowed)
    assert host_allowed("lttw-serve", allowed)  # the Service's name, as clients call it
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    # SIGTERM: the grace period covers the preStop pause and the server's drain
    pause = container["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep" and int(pause[1]) > 0
    assert pod["spec"]["terminationGracePeriodSeconds"] > int(pause[1]) + params["shutdown_timeout"]
    (key,) = [e for e in container["env"] if e["name"] == "LTTW_API_KEY"]  # --api-key's envvar
    assert set(key["valueFrom"]["secretKeyRef"]) == {"name", "key"}
    policy = docs["NetworkPolicy"]["spec"]
    assert policy["podSelector"]["matchLabels"] == pod["metadata"]["labels"]
    assert policy["policyTypes"] == ["Ingress", "Egress"] and policy["egress"] == []
    assert [p["port"] for rule in policy["ingress"] for p in rule["ports"]] == ["http"]


def _images() -> list[str]:
    jobs = yaml.safe_load((DEPLOY / "jobs" / "k8s-indexed-job.yaml").read_text(encoding="utf-8"))
    serve = _manifests()["Deployment"]
    return [
        check.instructions()["FROM"],
        *(c["image"] for c in serve["spec"]["template"]["spec"]["containers"]),
        *(c["image"] for c in jobs["spec"]["template"]["spec"]["containers"]),
    ]


def test_images_and_installs_are_pinned():
    for image in _images():  # a full version tag (a digest cannot be checked offline)
        name, _, tag = image.rpartition(":")
        assert name and tag != "latest" and re.match(r"\d+\.\d+\.\d+", tag), image
    pins = (DEPLOY / "constraints.txt").read_text(encoding="utf-8").splitlines()
    pinned = {line.split("==")[0] for line in pins if "==" in line}
    assert {"onnxruntime", "fastapi", "numpy", "torch", "submitit"} <= pinned
    assert "-c /tmp/lttw-src/deploy/constraints.txt" in check.instructions()["RUN"]
    assert check.CONSTRAINTS in check.context_names()  # in the image's build context
    sky = yaml.safe_load((DEPLOY / "jobs" / "skypilot-cell.yaml").read_text(encoding="utf-8"))
    assert "pip install -c deploy/constraints.txt '.[train,cluster]'" in sky["setup"]


def test_the_grid_job_runs_as_a_non_root_user():
    jobs = yaml.safe_load((DEPLOY / "jobs" / "k8s-indexed-job.yaml").read_text(encoding="utf-8"))
    pod = jobs["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}


def test_service_and_autoscaler_point_at_the_deployment():
    docs = _manifests()
    deployment, service, hpa = docs["Deployment"], docs["Service"], docs["HorizontalPodAutoscaler"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"] == labels
    assert service["spec"]["selector"] == labels
    assert service["metadata"]["name"] == "lttw-serve"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    names = {p["name"] for p in container["ports"]}
    assert {p["targetPort"] for p in service["spec"]["ports"]} <= names
    target = hpa["spec"]["scaleTargetRef"]
    assert (target["kind"], target["name"]) == ("Deployment", deployment["metadata"]["name"])
    assert 1 <= hpa["spec"]["minReplicas"] <= hpa["spec"]["maxReplicas"]
    assert "cpu" in container["resources"]["requests"]  # what utilisation is measured against


@pytest.mark.parametrize("bad", [["--no-such-option"], ["--port", "x"]])
def test_the_option_check_is_live(bad):
    with pytest.raises(Exception):  # noqa: B017 (click's usage errors)
        serve_params(bad)
