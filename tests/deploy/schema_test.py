"""Rendered objects decode into Kubernetes' own API types, with no field lost.

No cluster (so no server-side validation) is available in CI, and kustomize
passes misspelt fields through silently. kubectl's `--local` commands decode
their input into the typed Go structs of the API without a server: a value of
the wrong type fails to decode, and an unknown field is dropped. So:

- Deployments and Jobs go through `kubectl set serviceaccount --local` with
  their own service account, Services through `kubectl set selector --local`
  with their own selector (both no-ops), and every field of the input must
  come back unchanged (input is a subset of output): a misspelt field, such
  as `matchLabelkeys`, would be missing.
- Every other built-in kind must at least decode (type check).
- Custom resources (ServiceMonitor, PrometheusRule) are not in kubectl's
  scheme and are checked by manifests_test.py instead.
"""

import json
import subprocess
import unittest

import deploy_lib

POD_TEMPLATE_KINDS = ("Deployment", "Job")
CUSTOM_GROUPS = ("monitoring.coreos.com/",)


def kubectl_local(args, obj):
    proc = subprocess.run(
        ["kubectl"] + args + ["--local", "-f", "-", "-o", "json"],
        input=json.dumps(obj), capture_output=True, text=True, check=False)
    return proc


def missing_from(expected, actual, path="$"):
    """Paths of `expected` that `actual` lacks or holds with another value."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [path]
        problems = []
        for key, value in expected.items():
            if key not in actual:
                # The API types omit empty values (false, 0, "") on output.
                if value not in (False, 0, "", [], {}, None):
                    problems.append(f"{path}.{key}")
            else:
                problems += missing_from(value, actual[key], f"{path}.{key}")
        return problems
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [path]
        problems = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            problems += missing_from(e, a, f"{path}[{i}]")
        return problems
    return [] if str(expected) == str(actual) else [path]


class SchemaTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.objects = []
        for d in deploy_lib.kustomization_dirs():
            _, objects = deploy_lib.render(d)
            cls.objects += [(d, o) for o in objects]

    def built_in(self, kinds=None):
        """(label, object) for the objects of built-in kinds."""
        return [(f"{d}: {o['kind']}/{o['metadata']['name']}", o)
                for d, o in self.objects
                if not o["apiVersion"].startswith(CUSTOM_GROUPS)
                and (kinds is None or o["kind"] in kinds)]

    def test_workloads_round_trip_through_the_api_types(self):
        workloads = self.built_in(POD_TEMPLATE_KINDS)
        self.assertGreaterEqual(len(workloads), 3)  # dev, prod, farm (+ base)
        for label, o in workloads:
            with self.subTest(label):
                account = o["spec"]["template"]["spec"].get(
                    "serviceAccountName", "default")
                proc = kubectl_local(["set", "serviceaccount", account], o)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(missing_from(o, json.loads(proc.stdout)), [])

    def test_services_round_trip_through_the_api_types(self):
        services = self.built_in(("Service",))
        self.assertGreaterEqual(len(services), 6)
        for label, o in services:
            with self.subTest(label):
                selector = ",".join(f"{k}={v}" for k, v in
                                    sorted(o["spec"]["selector"].items()))
                proc = kubectl_local(["set", "selector", selector], o)
                self.assertEqual(proc.returncode, 0, proc.stderr)
                self.assertEqual(missing_from(o, json.loads(proc.stdout)), [])

    def test_every_built_in_object_decodes(self):
        for label, o in self.built_in():
            with self.subTest(label):
                # The command only supports pod templates; what matters is
                # that decoding, which comes first, succeeds.
                proc = kubectl_local(["set", "serviceaccount", "x"], o)
                self.assertNotIn("unable to decode", proc.stderr)
                self.assertNotIn("no kind", proc.stderr)

    def test_a_misspelt_field_is_detected(self):
        # The oracle itself: a field the API types do not have is dropped.
        o = next(o for _, o in self.objects if o["kind"] == "Deployment")
        bad = json.loads(json.dumps(o))
        bad["spec"]["template"]["spec"]["topologySpreadConstraints"][0][
            "matchLabelkeys"] = ["pod-template-hash"]
        account = bad["spec"]["template"]["spec"]["serviceAccountName"]
        proc = kubectl_local(["set", "serviceaccount", account], bad)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(
            missing_from(bad, json.loads(proc.stdout)),
            ["$.spec.template.spec.topologySpreadConstraints[0].matchLabelkeys"])

    def test_a_wrongly_typed_value_is_detected(self):
        o = next(o for _, o in self.objects
                 if o["kind"] == "HorizontalPodAutoscaler")
        bad = json.loads(json.dumps(o))
        bad["spec"]["minReplicas"] = "two"
        proc = kubectl_local(["set", "serviceaccount", "x"], bad)
        self.assertIn("unable to decode", proc.stderr)


if __name__ == "__main__":
    deploy_lib.require_tool("kubectl")
    deploy_lib.main()
