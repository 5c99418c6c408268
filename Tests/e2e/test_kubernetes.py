"""The Kubernetes manifests (deploy/kubernetes), without a cluster: each valid against the Kubernetes API's schema
(kubernetes-validate, strict), the parts naming each other consistently (labels, Secret, ConfigMap, ports, probes on
the gateway's own health addresses), and the ConfigMap's configuration with the Secret's variables accepted by the
gateway's own `check-config`."""

import base64
import json
import os
import subprocess

import kubernetes_validate
import yaml

from conftest import BINARY, ROOT

FOLDER = ROOT / "deploy" / "kubernetes"


def manifests():
    found = {}
    for path in sorted(FOLDER.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        if document.get("kind") != "Kustomization":
            found[document["kind"]] = document
    return found


def test_every_manifest_is_valid_against_the_kubernetes_schema():
    kustomization = yaml.safe_load((FOLDER / "kustomization.yaml").read_text())
    assert all((FOLDER / resource).exists() for resource in kustomization["resources"])
    for path in sorted(FOLDER.glob("*.yaml")):
        document = yaml.safe_load(path.read_text())
        if document["kind"] == "Kustomization":
            continue
        kubernetes_validate.validate(document, "1.32.0", strict=True)


def test_the_parts_name_each_other_and_the_gateway():
    parts = manifests()
    deployment, service, config_map, secret = parts["Deployment"], parts["Service"], parts["ConfigMap"], parts["Secret"]
    template = deployment["spec"]["template"]
    labels = template["metadata"]["labels"]
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert service["spec"]["selector"].items() <= labels.items()
    (container,) = template["spec"]["containers"]
    ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    assert service["spec"]["ports"][0]["targetPort"] in ports
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz" and container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    env = {variable["name"]: variable["value"] for variable in container["env"]}
    assert ports["http"] == int(env["GATEHOUSE_LISTEN_PORT"])
    assert container["envFrom"][0]["secretRef"]["name"] == secret["metadata"]["name"]
    volumes = {volume["name"]: volume for volume in template["spec"]["volumes"]}
    assert volumes["config"]["configMap"]["name"] == config_map["metadata"]["name"]
    assert "gatehouse.json" in config_map["data"] and container["args"][-1] == "/etc/gatehouse/gatehouse.json"
    # The image's user, and time to drain and finish before the kubelet kills the process.
    assert template["spec"]["securityContext"]["runAsUser"] == 10001
    listen = json.loads(config_map["data"]["gatehouse.json"])["listen"]
    assert template["spec"]["terminationGracePeriodSeconds"] > listen["drain_seconds"] + listen["shutdown_grace_seconds"]
    metrics = json.loads(config_map["data"]["gatehouse.json"])["metrics"]
    assert ports["metrics"] == metrics["port"] == int(template["metadata"]["annotations"]["prometheus.io/port"])


def test_the_config_map_with_the_secrets_variables_is_a_configuration_the_gateway_takes(tmp_path):
    parts = manifests()
    config = tmp_path / "gatehouse.json"
    config.write_text(parts["ConfigMap"]["data"]["gatehouse.json"])
    env = {name: value for name, value in os.environ.items() if not name.startswith("GATEHOUSE_")}
    env.update(parts["Secret"]["stringData"])
    env["GATEHOUSE_STORAGE_ENCRYPTION_KEY"] = base64.b64encode(os.urandom(32)).decode()  # the example names its kind only
    container = parts["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    env.update({variable["name"]: variable["value"] for variable in container["env"]})
    checked = subprocess.run([str(BINARY), "check-config", "--config", str(config)], env=env, capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "configuration OK: https://gate.example.org" in checked.stdout
