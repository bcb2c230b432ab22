"""Helpers shared by the deployment tests: paths, kustomize rendering, YAML.

The tests run under ctest as `/usr/bin/python3 <test>.py`; ctest sets
QUANTD_SOURCE_DIR to the repository root. PyYAML comes with Debian's
yamllint (python3-yaml is one of its dependencies), which scripts/setup.sh
installs.
"""

import os
import shutil
import subprocess
import sys
import unittest

import yaml

# ctest's SKIP_RETURN_CODE for these tests: a required tool is absent.
SKIP = 77

SOURCE_DIR = os.path.abspath(
    os.environ.get("QUANTD_SOURCE_DIR")
    or os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY_DIR = os.path.join(SOURCE_DIR, "deploy")
K8S_DIR = os.path.join(DEPLOY_DIR, "k8s")
DOCKER_DIR = os.path.join(SOURCE_DIR, "docker")
YAMLLINT_CONFIG = os.path.join(DEPLOY_DIR, ".yamllint")

# The kustomizations a user applies (components only render inside one).
OVERLAYS = ("dev", "prod")


def require_tool(name):
    """Exits with SKIP, saying why, when `name` is not on PATH."""
    path = shutil.which(name)
    if path is None:
        print(f"SKIPPED: '{name}' is not installed; these checks need it.")
        sys.exit(SKIP)
    return path


def kustomization_dirs():
    """Directories under deploy/k8s with a Kustomization (not a Component)."""
    found = []
    for root, _, files in os.walk(K8S_DIR):
        if "kustomization.yaml" not in files:
            continue
        with open(os.path.join(root, "kustomization.yaml")) as f:
            if yaml.safe_load(f).get("kind") == "Component":
                continue
        found.append(root)
    return sorted(found)


def render(kustomization_dir):
    """Runs `kubectl kustomize` (offline) and returns (yaml_text, objects)."""
    proc = subprocess.run(["kubectl", "kustomize", kustomization_dir],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise AssertionError(
            f"kubectl kustomize {kustomization_dir} failed:\n{proc.stderr}")
    objects = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
    return proc.stdout, objects


def load_yaml_file(path):
    with open(path) as f:
        return yaml.safe_load(f)


class Rendered:
    """The objects of one rendered kustomization, looked up by kind and name."""

    def __init__(self, objects):
        self.objects = objects

    def all(self, kind):
        return [o for o in self.objects if o.get("kind") == kind]

    def get(self, kind, name):
        matches = [o for o in self.all(kind) if o["metadata"]["name"] == name]
        if len(matches) != 1:
            raise AssertionError(
                f"expected one {kind} named '{name}', found {len(matches)}")
        return matches[0]

    def configmap_data(self, name):
        return self.get("ConfigMap", name).get("data", {})


def selector_matches(match_labels, labels):
    """True when every key=value of a matchLabels selector is in `labels`."""
    return bool(match_labels) and all(
        labels.get(k) == v for k, v in match_labels.items())


def main():
    """unittest.main with verbose output, for the `if __name__` block."""
    unittest.main(verbosity=2)
