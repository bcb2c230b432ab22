"""All YAML under deploy/ passes yamllint with deploy/.yamllint."""

import subprocess
import unittest

import deploy_lib


class YamllintTest(unittest.TestCase):

    def test_deploy_sources_pass_yamllint(self):
        proc = subprocess.run(
            ["yamllint", "-f", "parsable", "-c", deploy_lib.YAMLLINT_CONFIG,
             deploy_lib.DEPLOY_DIR],
            capture_output=True, text=True, check=False)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)

    def test_yamllint_rejects_a_known_bad_document(self):
        # Guards against a config that silently disables every rule.
        bad = "key: value\nkey: other\nlist:\n- a\n  - b\n"
        proc = subprocess.run(
            ["yamllint", "-f", "parsable", "-c", deploy_lib.YAMLLINT_CONFIG,
             "-"], input=bad, capture_output=True, text=True, check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn("duplicate", proc.stdout)


if __name__ == "__main__":
    deploy_lib.require_tool("yamllint")
    deploy_lib.main()
