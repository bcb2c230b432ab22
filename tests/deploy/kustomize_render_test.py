"""Every kustomization under deploy/k8s renders offline and lints clean.

CI has no cluster: `kubectl kustomize` (kustomize v5 built into kubectl) is
the renderer, and its output must pass the same yamllint config as the
sources, so what is applied is what was reviewed.
"""

import os
import subprocess
import unittest

import deploy_lib


class KustomizeRenderTest(unittest.TestCase):

    def test_overlays_dev_and_prod_and_the_farm_exist(self):
        dirs = {os.path.relpath(d, deploy_lib.K8S_DIR)
                for d in deploy_lib.kustomization_dirs()}
        for expected in ("base", "overlays/dev", "overlays/prod", "farm"):
            self.assertIn(expected, dirs)

    def test_every_kustomization_renders(self):
        for d in deploy_lib.kustomization_dirs():
            with self.subTest(kustomization=d):
                _, objects = deploy_lib.render(d)
                self.assertTrue(objects, f"{d} renders no objects")

    def test_rendered_objects_have_kind_and_unique_names(self):
        for d in deploy_lib.kustomization_dirs():
            with self.subTest(kustomization=d):
                _, objects = deploy_lib.render(d)
                seen = set()
                for o in objects:
                    self.assertIn("apiVersion", o)
                    self.assertIn("kind", o)
                    self.assertTrue(o.get("metadata", {}).get("name"))
                    key = (o["kind"], o["metadata"].get("namespace"),
                           o["metadata"]["name"])
                    self.assertNotIn(key, seen, f"{key} rendered twice")
                    seen.add(key)

    def test_overlay_objects_all_land_in_the_overlay_namespace(self):
        for overlay in deploy_lib.OVERLAYS:
            d = os.path.join(deploy_lib.K8S_DIR, "overlays", overlay)
            with self.subTest(overlay=overlay):
                _, objects = deploy_lib.render(d)
                namespaces = [o for o in objects if o["kind"] == "Namespace"]
                self.assertEqual(len(namespaces), 1)
                ns = namespaces[0]["metadata"]["name"]
                for o in objects:
                    if o["kind"] != "Namespace":
                        self.assertEqual(o["metadata"].get("namespace"), ns,
                                         f"{o['kind']}/{o['metadata']['name']}")

    def test_rendered_output_passes_yamllint(self):
        for d in deploy_lib.kustomization_dirs():
            with self.subTest(kustomization=d):
                text, _ = deploy_lib.render(d)
                proc = subprocess.run(
                    ["yamllint", "-f", "parsable", "-c",
                     deploy_lib.YAMLLINT_CONFIG, "-"],
                    input=text, capture_output=True, text=True, check=False)
                self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)


if __name__ == "__main__":
    deploy_lib.require_tool("kubectl")
    deploy_lib.require_tool("yamllint")
    deploy_lib.main()
