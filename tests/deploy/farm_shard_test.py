"""The farm Job's runner script splits the manifest into disjoint shards.

Runs the exact shell script of deploy/k8s/farm/job.yaml with /bin/sh (dash,
as in the image) once per completion index, with its fixed paths pointed into
a temp dir and a stand-in quantctl that records its arguments. The oracle is
the manifest itself: every job line lands in exactly one shard, and each
runner calls `quantctl batch` on its own shard and output directory.
"""

import os
import shutil
import subprocess
import tempfile
import unittest

import deploy_lib

JOB_YAML = os.path.join(deploy_lib.K8S_DIR, "farm", "job.yaml")
MANIFEST = os.path.join(deploy_lib.K8S_DIR, "farm", "manifest.jsonl")

# Records argv and the shard it was given.
FAKE_QUANTCTL = """#!/bin/sh
out=""
manifest=""
prev=""
for a in "$@"; do
  [ "$prev" = "--out" ] && out="$a"
  [ "$prev" = "--manifest" ] && manifest="$a"
  prev="$a"
done
mkdir -p "$out"
printf '%s\\n' "$@" > "$out/argv"
cp "$manifest" "$out/shard.jsonl"
"""


class FarmShardTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        job = deploy_lib.load_yaml_file(JOB_YAML)
        container = job["spec"]["template"]["spec"]["containers"][0]
        cls.command = container["command"]
        cls.script = container["args"][0]
        cls.env = {e["name"]: e["value"] for e in container["env"]
                   if "value" in e}
        cls.shards = int(cls.env["SHARDS"])
        with open(MANIFEST) as f:
            cls.lines = [l.rstrip("\n") for l in f if l.strip()]

    def run_all_shards(self, tmp, manifest_lines):
        manifest = os.path.join(tmp, "manifest.jsonl")
        with open(manifest, "w") as f:
            f.write("\n".join(manifest_lines) + "\n")
        quantctl = os.path.join(tmp, "quantctl")
        with open(quantctl, "w") as f:
            f.write(FAKE_QUANTCTL)
        os.chmod(quantctl, 0o755)
        os.makedirs(os.path.join(tmp, "scratch"))
        script = (self.script
                  .replace("/etc/quantd/farm/manifest.jsonl", manifest)
                  .replace("/usr/local/bin/quantctl", quantctl)
                  .replace("/scratch/", os.path.join(tmp, "scratch") + "/")
                  .replace("/data/out/", os.path.join(tmp, "out") + "/"))
        for index in range(self.shards):
            env = dict(os.environ, JOB_COMPLETION_INDEX=str(index),
                       SERVERS="dns:///quantd-headless.ns.svc:50051",
                       **{k: v for k, v in self.env.items()
                          if k != "SERVERS"})
            proc = subprocess.run(self.command + [script], env=env,
                                  capture_output=True, text=True, check=False)
            self.assertEqual(proc.returncode, 0, proc.stderr)
        shards = []
        for index in range(self.shards):
            out = os.path.join(tmp, "out", f"shard-{index}")
            with open(os.path.join(out, "shard.jsonl")) as f:
                shard = [l.rstrip("\n") for l in f if l.strip()]
            with open(os.path.join(out, "argv")) as f:
                argv = f.read().splitlines()
            shards.append((shard, argv, out))
        return shards

    def test_runner_shell_is_the_images_posix_sh(self):
        self.assertEqual(self.command, ["/bin/sh", "-c"])

    def test_every_manifest_line_lands_in_exactly_one_shard(self):
        with tempfile.TemporaryDirectory() as tmp:
            shards = self.run_all_shards(tmp, self.lines)
        seen = [line for shard, _, _ in shards for line in shard]
        self.assertEqual(sorted(seen), sorted(self.lines))

    def test_shards_are_balanced_round_robin(self):
        # 14 jobs over N shards: sizes differ by at most one.
        lines = ['{"id": "job-%02d"}' % i for i in range(14)]
        with tempfile.TemporaryDirectory() as tmp:
            shards = self.run_all_shards(tmp, lines)
        sizes = [len(shard) for shard, _, _ in shards]
        self.assertEqual(sum(sizes), 14)
        self.assertLessEqual(max(sizes) - min(sizes), 1)
        # Round robin by line: shard 0 gets lines 0, N, 2N, ...
        self.assertEqual(shards[0][0], lines[::self.shards])

    def test_blank_lines_are_not_jobs(self):
        lines = ['{"id": "a"}', "", '{"id": "b"}', "   ", '{"id": "c"}']
        with tempfile.TemporaryDirectory() as tmp:
            shards = self.run_all_shards(tmp, lines)
        seen = sorted(line for shard, _, _ in shards for line in shard)
        self.assertEqual(seen, ['{"id": "a"}', '{"id": "b"}', '{"id": "c"}'])

    def test_each_runner_calls_quantctl_batch_on_its_shard(self):
        with tempfile.TemporaryDirectory() as tmp:
            for index, (_, argv, out) in enumerate(
                    self.run_all_shards(tmp, self.lines)):
                self.assertEqual(argv[0], "batch")
                flags = dict(zip(argv[1::2], argv[2::2]))
                self.assertEqual(flags["--out"], out)
                self.assertTrue(flags["--manifest"].endswith(
                    f"manifest-{index}.jsonl"))
                self.assertEqual(flags["--servers"],
                                 "dns:///quantd-headless.ns.svc:50051")
                self.assertEqual(flags["--concurrency"],
                                 self.env["CONCURRENCY"])
                self.assertEqual(flags["--retries"], self.env["RETRIES"])

    def test_script_passes_shellcheck(self):
        shellcheck = shutil.which("shellcheck")
        if shellcheck is None:
            self.skipTest("shellcheck is not installed")
        proc = subprocess.run([shellcheck, "--shell=sh", "-"],
                              input=self.script, capture_output=True,
                              text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout)


if __name__ == "__main__":
    deploy_lib.require_tool("awk")
    deploy_lib.main()
