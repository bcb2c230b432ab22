"""Checks the rendered dev and prod overlays and the farm Job object by object.

What is asserted comes from the service contract (service-reference.md §1.4,
§2.4-2.7): native gRPC probes on the readiness service name and on "",
non-root read-only pods, ports equal to the QUANTD_* flags, workers from the
CPU limit, a termination grace above preStop + drain, Services and budgets
that select the pods, an HPA that owns the replica count, and the QUANTD_*
variables being real flags of the quantd binary (when it is built).

Usage: manifests_test.py [--quantd PATH_TO_QUANTD_BINARY] [unittest args]
"""

import json
import os
import re
import subprocess
import sys
import unittest

import deploy_lib

READINESS_SERVICE = "quantd.v1.QuantizationService"
QUANTD_BINARY = None  # set from --quantd
QUANTCTL_BINARY = None  # set from --quantctl


def _overlay(name):
    _, objects = deploy_lib.render(
        os.path.join(deploy_lib.K8S_DIR, "overlays", name))
    return deploy_lib.Rendered(objects)


def _container(pod_spec, name):
    matches = [c for c in pod_spec["containers"] if c["name"] == name]
    if len(matches) != 1:
        raise AssertionError(f"expected one container '{name}'")
    return matches[0]


def _port(container, name):
    for p in container.get("ports", []):
        if p["name"] == name:
            return p["containerPort"]
    raise AssertionError(f"container '{container['name']}' has no port {name}")


def _env_from_configmap(rendered, container):
    """The data of every ConfigMap the container takes with envFrom."""
    data = {}
    for source in container.get("envFrom", []):
        ref = source.get("configMapRef")
        if ref:
            data.update(rendered.configmap_data(ref["name"]))
    return data


def _prestop_seconds(container):
    """Seconds the preStop hook holds the pod before SIGTERM."""
    pre_stop = container.get("lifecycle", {}).get("preStop")
    if pre_stop is None:
        raise AssertionError("container has no preStop hook")
    if "sleep" in pre_stop:
        return int(pre_stop["sleep"]["seconds"])
    command = pre_stop["exec"]["command"]
    if os.path.basename(command[0]) != "sleep" or len(command) != 2:
        raise AssertionError(f"preStop is not a plain sleep: {command}")
    return int(command[1])


def _cpu_cores(quantity):
    """Kubernetes CPU quantity ("2", "500m", 1.5) in cores."""
    text = str(quantity)
    if text.endswith("m"):
        return int(text[:-1]) / 1000
    return float(text)


_MEMORY_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
                 "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def _bytes(quantity):
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([A-Za-z]*)", str(quantity))
    if match is None:
        raise AssertionError(f"bad memory quantity {quantity!r}")
    number, unit = match.groups()
    return float(number) * (_MEMORY_UNITS[unit] if unit else 1)


def _declared_server_flags():
    """Names of the ABSL_FLAGs that server/*.cc declare."""
    declared = set()
    server_dir = os.path.join(deploy_lib.SOURCE_DIR, "server")
    if not os.path.isdir(server_dir):
        return declared
    for name in os.listdir(server_dir):
        if name.endswith(".cc"):
            with open(os.path.join(server_dir, name)) as f:
                declared |= set(re.findall(r"ABSL_FLAG\([^,]+,\s*(\w+)",
                                           f.read()))
    return declared


def _readme_metric_names():
    """Metric names in the first column of deploy/README.md's tables."""
    with open(os.path.join(deploy_lib.DEPLOY_DIR, "README.md")) as f:
        return set(re.findall(r"^\| `((?:quantd|grpc_server)_\w+)` \|",
                              f.read(), re.MULTILINE))


class OverlayTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.overlays = {name: _overlay(name) for name in deploy_lib.OVERLAYS}

    def each(self):
        """Yields (overlay, rendered objects, pod spec, quantd container)."""
        for name, rendered in self.overlays.items():
            with self.subTest(overlay=name):
                deployment = rendered.get("Deployment", "quantd")
                pod = deployment["spec"]["template"]["spec"]
                yield name, rendered, pod, _container(pod, "quantd")

    def test_container_ports_equal_the_port_flags(self):
        for _, rendered, _, c in self.each():
            flags = _env_from_configmap(rendered, c)
            self.assertEqual(_port(c, "grpc"), int(flags["QUANTD_PORT"]))
            self.assertEqual(_port(c, "metrics"),
                             int(flags["QUANTD_METRICS_PORT"]))

    def test_readiness_probe_is_native_grpc_on_the_service_name(self):
        for _, _, _, c in self.each():
            probe = c["readinessProbe"]["grpc"]
            self.assertEqual(probe["port"], _port(c, "grpc"))
            self.assertEqual(probe.get("service"), READINESS_SERVICE)

    def test_liveness_probe_is_native_grpc_on_the_whole_server(self):
        # Service "" is the process as a whole: never load- or drain-dependent.
        for _, _, _, c in self.each():
            probe = c["livenessProbe"]["grpc"]
            self.assertEqual(probe["port"], _port(c, "grpc"))
            self.assertEqual(probe.get("service", ""), "")

    def test_startup_probe_gates_liveness_for_at_least_a_minute(self):
        for _, _, _, c in self.each():
            probe = c["startupProbe"]
            self.assertEqual(probe["grpc"]["port"], _port(c, "grpc"))
            budget = probe.get("periodSeconds", 10) * probe.get(
                "failureThreshold", 3)
            self.assertGreaterEqual(budget, 60)

    def test_liveness_tolerates_a_busy_pod_longer_than_readiness(self):
        for _, _, _, c in self.each():
            live, ready = c["livenessProbe"], c["readinessProbe"]
            def budget(probe):
                return probe.get("periodSeconds", 10) * probe.get(
                    "failureThreshold", 3)
            self.assertGreater(budget(live), budget(ready))

    def test_pod_runs_as_the_image_uid_non_root(self):
        for _, _, pod, c in self.each():
            psc, csc = pod["securityContext"], c["securityContext"]
            self.assertIs(psc["runAsNonRoot"], True)
            self.assertEqual(psc["runAsUser"], 10001)  # USER in the Dockerfile
            self.assertNotEqual(psc.get("runAsGroup", 0), 0)
            self.assertEqual(psc["seccompProfile"]["type"], "RuntimeDefault")
            self.assertIs(csc["readOnlyRootFilesystem"], True)
            self.assertIs(csc["allowPrivilegeEscalation"], False)
            self.assertFalse(csc.get("privileged", False))
            self.assertEqual(csc["capabilities"]["drop"], ["ALL"])
            self.assertNotIn("add", csc["capabilities"])
            self.assertFalse(pod.get("hostNetwork", False))
            self.assertFalse(pod.get("automountServiceAccountToken", True))

    def test_writable_paths_are_volumes(self):
        # Read-only root: /tmp must be an emptyDir, the TPC dir a ConfigMap.
        for _, rendered, pod, c in self.each():
            volumes = {v["name"]: v for v in pod["volumes"]}
            mounts = {m["mountPath"]: volumes[m["name"]]
                      for m in c["volumeMounts"]}
            self.assertIn("emptyDir", mounts["/tmp"])
            tpc_dir = _env_from_configmap(rendered, c)["QUANTD_TPC_DIR"]
            rendered.get("ConfigMap", mounts[tpc_dir]["configMap"]["name"])

    def test_tpc_configmap_files_are_mct_tpc_json(self):
        for _, rendered, pod, c in self.each():
            tpc_dir = _env_from_configmap(rendered, c)["QUANTD_TPC_DIR"]
            volume = next(v for v in pod["volumes"] if v["name"] == next(
                m["name"] for m in c["volumeMounts"]
                if m["mountPath"] == tpc_dir))
            files = rendered.configmap_data(volume["configMap"]["name"])
            self.assertTrue(files)
            for file_name, text in files.items():
                tpc = json.loads(text)
                for key in ("name", "tpc_platform_type", "tpc_minor_version",
                            "default_qco", "operator_set", "fusing_patterns",
                            "SCHEMA_VERSION"):
                    self.assertIn(key, tpc, f"{file_name}: no '{key}'")

    def test_tpc_files_pass_quantctl_tpc_validate(self):
        if not QUANTCTL_BINARY or not os.path.exists(QUANTCTL_BINARY):
            self.skipTest("quantctl is not built in this tree")
        tpc_dir = os.path.join(deploy_lib.K8S_DIR, "base", "tpc")
        for name in sorted(os.listdir(tpc_dir)):
            proc = subprocess.run(
                [QUANTCTL_BINARY, "tpc", "validate",
                 os.path.join(tpc_dir, name)],
                capture_output=True, text=True, check=False, timeout=60)
            if "unknown command 'tpc'" in proc.stderr:
                self.skipTest("quantctl has no 'tpc' command yet")
            self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_resources_have_requests_within_limits(self):
        for _, _, _, c in self.each():
            req, lim = c["resources"]["requests"], c["resources"]["limits"]
            self.assertLessEqual(_cpu_cores(req["cpu"]), _cpu_cores(lim["cpu"]))
            self.assertLessEqual(_bytes(req["memory"]), _bytes(lim["memory"]))
            # Whole CPUs: the worker count is the CPU limit.
            self.assertEqual(_cpu_cores(lim["cpu"]) % 1, 0)

    def test_workers_come_from_the_cpu_limit(self):
        for _, _, _, c in self.each():
            env = {e["name"]: e for e in c.get("env", [])}
            ref = env["QUANTD_WORKERS"]["valueFrom"]["resourceFieldRef"]
            self.assertEqual(ref["resource"], "limits.cpu")
            self.assertEqual(ref["containerName"], "quantd")
            self.assertEqual(str(ref.get("divisor", "1")), "1")

    def test_termination_grace_exceeds_prestop_plus_drain(self):
        for _, rendered, pod, c in self.each():
            flags = _env_from_configmap(rendered, c)
            drain = int(flags["QUANTD_DRAIN_SECONDS"]) + int(
                flags.get("QUANTD_DRAIN_DELAY_SECONDS", "0"))
            grace = pod["terminationGracePeriodSeconds"]
            # 5 s at least for the process to flush and exit after the drain.
            self.assertGreaterEqual(grace, _prestop_seconds(c) + drain + 5)

    def test_server_listens_on_every_interface(self):
        # Probes and Services dial the pod IP; quantd's default is loopback.
        for _, rendered, _, c in self.each():
            self.assertIn(
                _env_from_configmap(rendered, c)["QUANTD_LISTEN_ADDRESS"],
                ("0.0.0.0", "[::]"))

    def test_memory_budgets_fit_the_memory_limit(self):
        # Admitted jobs' estimates + the in-memory upload store + 512 MiB for
        # the process must fit, or the kernel OOM-kills running jobs.
        for _, rendered, _, c in self.each():
            flags = _env_from_configmap(rendered, c)
            jobs = int(flags["QUANTD_MAX_JOB_MEMORY_MB"])
            uploads = int(flags["QUANTD_UPLOAD_STORE_MB"])
            self.assertGreater(jobs, 0, "0 means unbounded")
            limit = _bytes(c["resources"]["limits"]["memory"])
            self.assertLessEqual((jobs + uploads + 512) * 2**20, limit)

    def test_connection_age_lets_clients_re_resolve_without_cutting_jobs(self):
        for _, rendered, _, c in self.each():
            flags = _env_from_configmap(rendered, c)
            keepalive = int(flags["QUANTD_KEEPALIVE_TIME_MS"])
            age = int(flags["QUANTD_MAX_CONNECTION_AGE_MS"])
            grace = int(flags["QUANTD_MAX_CONNECTION_AGE_GRACE_MS"])
            drain_ms = int(flags["QUANTD_DRAIN_SECONDS"]) * 1000
            # gRPC clamps keepalive below 10 s; above 5 min dead peers linger.
            self.assertGreaterEqual(keepalive, 10_000)
            self.assertLessEqual(keepalive, 300_000)
            # New replicas get traffic within 30 min at worst.
            self.assertLessEqual(age, 30 * 60_000)
            # A job that a drain would let finish is never cut by rotation.
            self.assertGreaterEqual(grace, drain_ms)
            self.assertGreater(grace, age)

    def test_rollout_never_lowers_capacity(self):
        for name, rendered, _, _ in self.each():
            rolling = rendered.get("Deployment", "quantd")["spec"]["strategy"][
                "rollingUpdate"]
            self.assertEqual(rolling["maxUnavailable"], 0)
            self.assertGreaterEqual(rolling["maxSurge"], 1)

    def test_topology_spread_selects_the_pods_themselves(self):
        for _, rendered, pod, _ in self.each():
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            keys = set()
            for constraint in pod["topologySpreadConstraints"]:
                self.assertTrue(deploy_lib.selector_matches(
                    constraint["labelSelector"]["matchLabels"], labels))
                keys.add(constraint["topologyKey"])
            self.assertEqual(keys, {"topology.kubernetes.io/zone",
                                    "kubernetes.io/hostname"})

    def test_headless_service_lists_only_ready_pods(self):
        for _, rendered, _, c in self.each():
            svc = rendered.get("Service", "quantd-headless")
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            self.assertEqual(svc["spec"]["clusterIP"], "None")
            self.assertFalse(svc["spec"].get("publishNotReadyAddresses", False))
            self.assertTrue(
                deploy_lib.selector_matches(svc["spec"]["selector"], labels))
            port = svc["spec"]["ports"][0]
            # Clients dial the pod IPs directly: service port == container port.
            self.assertEqual(port["port"], _port(c, "grpc"))
            self.assertEqual(port["targetPort"], "grpc")

    def test_clusterip_service_reaches_the_grpc_port(self):
        for _, rendered, _, c in self.each():
            svc = rendered.get("Service", "quantd")
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            self.assertNotEqual(svc["spec"].get("clusterIP"), "None")
            self.assertTrue(
                deploy_lib.selector_matches(svc["spec"]["selector"], labels))
            self.assertEqual(svc["spec"]["ports"][0]["targetPort"], "grpc")

    def test_metrics_service_reaches_the_metrics_port(self):
        for _, rendered, _, c in self.each():
            svc = rendered.get("Service", "quantd-metrics")
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            self.assertTrue(
                deploy_lib.selector_matches(svc["spec"]["selector"], labels))
            self.assertEqual(svc["spec"]["ports"][0]["targetPort"], "metrics")
            self.assertEqual(svc["spec"]["ports"][0]["name"], "metrics")

    def test_prod_servicemonitor_scrapes_only_the_metrics_service(self):
        rendered = self.overlays["prod"]
        monitor = rendered.get("ServiceMonitor", "quantd")
        selector = monitor["spec"]["selector"]["matchLabels"]
        selected = [s["metadata"]["name"] for s in rendered.all("Service")
                    if deploy_lib.selector_matches(selector,
                                                   s["metadata"]["labels"])]
        self.assertEqual(selected, ["quantd-metrics"])
        self.assertEqual(monitor["spec"]["endpoints"][0]["port"], "metrics")

    def test_prod_alert_rules_use_only_documented_metrics(self):
        rule = self.overlays["prod"].get("PrometheusRule", "quantd")
        exprs = " ".join(r["expr"] for g in rule["spec"]["groups"]
                         for r in g["rules"])
        documented = _readme_metric_names()
        used = set(re.findall(r"\b((?:quantd|grpc_server)_\w+)", exprs))
        self.assertTrue(used)
        for name in used:
            self.assertIn(name, documented)

    def test_readme_metrics_are_the_ones_the_server_registers(self):
        source = os.path.join(deploy_lib.SOURCE_DIR, "server", "metrics.cc")
        if not os.path.exists(source):
            self.skipTest("server/metrics.cc does not exist yet")
        with open(source) as f:
            registered = set(re.findall(r'\.Name\("(\w+)"\)', f.read()))
        self.assertEqual(_readme_metric_names(), registered)

    def test_network_policy_opens_only_the_named_ports(self):
        for _, rendered, _, c in self.each():
            policy = rendered.get("NetworkPolicy", "quantd")
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            self.assertTrue(deploy_lib.selector_matches(
                policy["spec"]["podSelector"]["matchLabels"], labels))
            ports = {p["port"] for rule in policy["spec"]["ingress"]
                     for p in rule["ports"]}
            self.assertEqual(ports, {p["name"] for p in c["ports"]})

    def test_pdb_selects_the_pods_and_lets_one_go(self):
        for _, rendered, _, _ in self.each():
            pdb = rendered.get("PodDisruptionBudget", "quantd")
            labels = rendered.get("Deployment", "quantd")["spec"]["template"][
                "metadata"]["labels"]
            self.assertTrue(deploy_lib.selector_matches(
                pdb["spec"]["selector"]["matchLabels"], labels))
            # maxUnavailable keeps a one-replica install drainable.
            self.assertEqual(pdb["spec"]["maxUnavailable"], 1)

    def test_hpa_owns_the_replica_count(self):
        for _, rendered, _, _ in self.each():
            deployment = rendered.get("Deployment", "quantd")
            hpa = rendered.get("HorizontalPodAutoscaler", "quantd")
            self.assertEqual(hpa["apiVersion"], "autoscaling/v2")
            self.assertEqual(hpa["spec"]["scaleTargetRef"],
                             {"apiVersion": "apps/v1", "kind": "Deployment",
                              "name": "quantd"})
            self.assertNotIn("replicas", deployment["spec"])
            self.assertGreaterEqual(hpa["spec"]["minReplicas"], 1)
            self.assertLessEqual(hpa["spec"]["minReplicas"],
                                 hpa["spec"]["maxReplicas"])
            cpu = [m for m in hpa["spec"]["metrics"] if m["type"] == "Resource"]
            self.assertEqual(cpu[0]["resource"]["name"], "cpu")

    def test_prod_hpa_scales_on_queue_depth_and_spans_zones(self):
        hpa = self.overlays["prod"].get("HorizontalPodAutoscaler", "quantd")
        pods = [m["pods"] for m in hpa["spec"]["metrics"]
                if m["type"] == "Pods"]
        self.assertEqual(pods[0]["metric"]["name"], "quantd_queue_depth")
        self.assertEqual(pods[0]["target"]["type"], "AverageValue")
        self.assertGreaterEqual(hpa["spec"]["minReplicas"], 3)

    def test_prod_is_larger_than_dev(self):
        def size(name):
            r = self.overlays[name]
            pod = r.get("Deployment", "quantd")["spec"]["template"]["spec"]
            hpa = r.get("HorizontalPodAutoscaler", "quantd")["spec"]
            cpu = _cpu_cores(_container(pod, "quantd")["resources"]["limits"]
                             ["cpu"])
            return cpu, hpa["minReplicas"], hpa["maxReplicas"]
        for dev, prod in zip(size("dev"), size("prod")):
            self.assertLess(dev, prod)

    def test_overlays_pin_their_own_image_tags(self):
        images = {}
        for name, _, _, c in self.each():
            image = c["image"]
            self.assertRegex(image, r":[\w][\w.-]*$", "image without a tag")
            self.assertFalse(image.endswith(":latest"))
            images[name] = image
        self.assertNotEqual(images["dev"], images["prod"])

    def test_readme_documents_every_flag_variable(self):
        with open(os.path.join(deploy_lib.DEPLOY_DIR, "README.md")) as f:
            readme = f.read()
        for _, rendered, _, c in self.each():
            names = set(_env_from_configmap(rendered, c))
            names |= {e["name"] for e in c.get("env", [])}
            for name in sorted(names):
                self.assertTrue(f"`{name}`" in readme,
                                f"deploy/README.md does not document {name}")

    def test_flag_variables_are_declared_in_the_server_source(self):
        # The same check as below, from the ABSL_FLAG declarations, so a typo
        # is caught even before quantd links.
        declared = _declared_server_flags()
        if not declared:
            self.skipTest("server/ declares no flags yet")
        for _, rendered, _, c in self.each():
            names = set(_env_from_configmap(rendered, c))
            names |= {e["name"] for e in c.get("env", [])}
            for name in sorted(names):
                self.assertIn(name.removeprefix("QUANTD_").lower(), declared,
                              f"{name} sets no quantd flag")

    def test_flag_variables_are_flags_of_the_quantd_binary(self):
        if not QUANTD_BINARY or not os.path.exists(QUANTD_BINARY):
            self.skipTest("quantd is not built in this tree yet")
        proc = subprocess.run([QUANTD_BINARY, "--helpfull"],
                              capture_output=True, text=True, check=False,
                              timeout=30)
        help_text = proc.stdout + proc.stderr
        flags = set(re.findall(r"^\s+--(\w+) \(", help_text, re.MULTILINE))
        self.assertIn("port", flags, help_text[:2000])
        for _, rendered, _, c in self.each():
            names = set(_env_from_configmap(rendered, c))
            names |= {e["name"] for e in c.get("env", [])}
            for name in sorted(names):
                self.assertIn(name.removeprefix("QUANTD_").lower(), flags,
                              f"{name} sets no quantd flag")


class TlsOverlayTest(unittest.TestCase):
    """prod-tls: TLS from a Secret, and exec probes since gRPC probes can't."""

    @classmethod
    def setUpClass(cls):
        cls.rendered = _overlay("prod-tls")
        cls.pod = cls.rendered.get("Deployment", "quantd")["spec"]["template"][
            "spec"]
        cls.container = _container(cls.pod, "quantd")
        cls.flags = _env_from_configmap(cls.rendered, cls.container)
        cls.env = {e["name"]: e for e in cls.container["env"]}

    def probe_argv(self, name):
        probe = self.container[name]
        self.assertNotIn("grpc", probe)  # one handler per probe
        return probe["exec"]["command"]

    def test_probes_run_quantctl_health_over_tls_on_localhost(self):
        for name in ("startupProbe", "livenessProbe", "readinessProbe"):
            with self.subTest(probe=name):
                argv = self.probe_argv(name)
                self.assertEqual(argv[:2],
                                 ["/usr/local/bin/quantctl", "health"])
                self.assertIn("--tls", argv)
                self.assertEqual(argv[argv.index("--server") + 1],
                                 f"localhost:{self.flags['QUANTD_PORT']}")
                # Each attempt ends before the kubelet gives up on it.
                self.assertLess(
                    int(argv[argv.index("--timeout_s") + 1]),
                    self.container[name]["timeoutSeconds"])

    def test_readiness_asks_for_the_service_and_liveness_for_the_server(self):
        readiness = self.probe_argv("readinessProbe")
        self.assertEqual(readiness[readiness.index("--service") + 1],
                         READINESS_SERVICE)
        self.assertNotIn("--service", self.probe_argv("livenessProbe"))
        self.assertNotIn("--service", self.probe_argv("startupProbe"))

    def test_certificate_files_come_from_the_tls_secret(self):
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mount = next(m for m in self.container["volumeMounts"]
                     if m["name"] == "tls")
        self.assertEqual(volumes["tls"]["secret"]["secretName"], "quantd-tls")
        self.assertTrue(mount["readOnly"])
        for name, key in (("QUANTD_TLS_CERT", "tls.crt"),
                          ("QUANTD_TLS_KEY", "tls.key")):
            self.assertEqual(self.env[name]["value"],
                             f"{mount['mountPath']}/{key}")
        ca = self.probe_argv("readinessProbe")
        self.assertEqual(ca[ca.index("--tls_ca") + 1],
                         f"{mount['mountPath']}/ca.crt")
        # fsGroup makes the 0440 files readable by the non-root user only.
        self.assertEqual(volumes["tls"]["secret"]["defaultMode"], 0o440)
        self.assertEqual(self.pod["securityContext"]["fsGroup"],
                         self.pod["securityContext"]["runAsGroup"])

    def test_tls_variables_are_declared_server_flags(self):
        declared = _declared_server_flags()
        if not declared:
            self.skipTest("server/ declares no flags yet")
        for name in ("QUANTD_TLS_CERT", "QUANTD_TLS_KEY"):
            self.assertIn(name.removeprefix("QUANTD_").lower(), declared)

    def test_probe_arguments_are_accepted_by_quantctl_health(self):
        if not QUANTCTL_BINARY or not os.path.exists(QUANTCTL_BINARY):
            self.skipTest("quantctl is not built in this tree")
        for name in ("livenessProbe", "readinessProbe"):
            argv = [QUANTCTL_BINARY] + self.probe_argv(name)[1:]
            # Nothing listens on port 1: the call fails, but not on usage.
            argv[argv.index("--server") + 1] = "127.0.0.1:1"
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  check=False, timeout=60)
            if "unknown command 'health'" in proc.stderr:
                self.skipTest("quantctl has no 'health' command yet")
            self.assertNotEqual(proc.returncode, 0)
            for usage_error in ("unknown argument", "needs a value",
                                "usage:"):
                self.assertNotIn(usage_error, proc.stderr)


class FarmJobTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        _, objects = deploy_lib.render(os.path.join(deploy_lib.K8S_DIR, "farm"))
        cls.farm = deploy_lib.Rendered(objects)
        cls.prod = _overlay("prod")
        cls.job = cls.farm.get("Job", "quantd-farm")
        cls.pod = cls.job["spec"]["template"]["spec"]
        cls.container = _container(cls.pod, "batch")
        cls.env = {e["name"]: e for e in cls.container["env"]}

    def test_job_is_indexed_with_one_runner_per_shard(self):
        spec = self.job["spec"]
        self.assertEqual(spec["completionMode"], "Indexed")
        shards = int(self.env["SHARDS"]["value"])
        self.assertEqual(spec["completions"], shards)
        self.assertEqual(spec["parallelism"], shards)
        # Per-index retries need restartPolicy Never.
        self.assertGreaterEqual(spec["backoffLimitPerIndex"], 1)
        self.assertEqual(self.pod["restartPolicy"], "Never")

    def test_runners_dial_the_headless_service_with_dns_resolver(self):
        servers = self.env["SERVERS"]["value"]
        deployment = self.prod.get("Deployment", "quantd")
        flags = _env_from_configmap(self.prod, _container(
            deployment["spec"]["template"]["spec"], "quantd"))
        headless = self.prod.get("Service", "quantd-headless")["metadata"][
            "name"]
        self.assertEqual(
            servers, f"dns:///{headless}.$(POD_NAMESPACE).svc.cluster.local:"
            f"{flags['QUANTD_PORT']}")
        self.assertEqual(
            self.env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.namespace")
        # The Job runs where prod's Deployment runs.
        self.assertEqual(self.job["metadata"]["namespace"],
                         deployment["metadata"]["namespace"])

    def test_runner_invokes_quantctl_batch_with_every_setting(self):
        script = self.container["args"][0]
        for part in ("quantctl batch", "--manifest", "--servers \"${SERVERS}\"",
                     "--out", "--concurrency \"${CONCURRENCY}\"",
                     "--retries \"${RETRIES}\""):
            self.assertIn(part, script)

    def test_runner_image_is_the_prod_server_image(self):
        server = _container(self.prod.get("Deployment", "quantd")["spec"]
                            ["template"]["spec"], "quantd")
        self.assertEqual(self.container["image"], server["image"])

    def test_runner_pod_is_non_root_and_read_only(self):
        csc = self.container["securityContext"]
        self.assertIs(self.pod["securityContext"]["runAsNonRoot"], True)
        self.assertIs(csc["readOnlyRootFilesystem"], True)
        self.assertIs(csc["allowPrivilegeEscalation"], False)
        self.assertEqual(csc["capabilities"]["drop"], ["ALL"])

    def test_manifest_lines_are_jobs_with_unique_ids(self):
        volume = next(v for v in self.pod["volumes"] if "configMap" in v)
        data = self.farm.configmap_data(volume["configMap"]["name"])
        lines = [l for l in data["manifest.jsonl"].splitlines() if l.strip()]
        ids = []
        for line in lines:
            job = json.loads(line)
            for key in ("id", "model", "calib", "tpc"):
                self.assertIn(key, job)
            # Absolute paths: the runner reads a copy of its shard elsewhere.
            self.assertTrue(job["model"].startswith("/data/"))
            self.assertTrue(job["calib"].startswith("/data/"))
            ids.append(job["id"])
        self.assertEqual(len(ids), len(set(ids)))
        self.assertGreaterEqual(len(ids), int(self.env["SHARDS"]["value"]))


if __name__ == "__main__":
    for option in ("--quantd", "--quantctl"):
        if option in sys.argv:
            i = sys.argv.index(option)
            globals()[option[2:].upper() + "_BINARY"] = sys.argv[i + 1]
            del sys.argv[i:i + 2]
    deploy_lib.require_tool("kubectl")
    deploy_lib.main()
