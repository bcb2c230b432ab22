"""docker/runtime_rootfs.sh lays out every shared library the binaries load
that the slim runtime base lacks, and nothing the base already has.

The oracle is this Debian machine: `ldd` lists what the built binaries load,
`dpkg-query -S` names the package that ships each library, and the slim
base is what debian:bookworm-slim has before any install (the Priority
required set and apt, with their dependencies). The script runs on the
built binaries with that package list, as the image's build stage runs it;
each library then is either in its output at ldd's path (merged /usr) or
ships with a base package.

Usage: runtime_libraries_test.py BINARY... [-- unittest args]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import deploy_lib
import dockerfile_test

BINARIES = []  # from the command line


def shared_libraries(binary):
    """Resolved paths of the shared libraries `binary` loads (ldd)."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True,
                         check=True).stdout
    missing = [l.split()[0] for l in out.splitlines() if "not found" in l]
    if missing:
        raise AssertionError(f"{binary}: unresolved libraries {missing}")
    return sorted(set(re.findall(r"=>\s+(/\S+)", out)))


def owning_packages(paths):
    """{path: Debian package that ships it} (merged-/usr aware), one query."""
    candidates = {}
    for path in paths:
        real = os.path.realpath(path)
        forms = [path, real]
        for p in (path, real):
            forms.append(p[len("/usr"):] if p.startswith("/usr/")
                         else "/usr" + p)
        candidates[path] = forms
    everything = sorted({f for forms in candidates.values() for f in forms})
    out = subprocess.run(["dpkg-query", "-S"] + everything, capture_output=True,
                         text=True, check=False).stdout
    shipped = {}
    for line in out.splitlines():
        package, sep, shipped_path = line.partition(": ")
        if sep and shipped_path.strip() in everything:
            shipped[shipped_path.strip()] = package.split(",")[0].split(":")[0]
    owners = {}
    for path, forms in candidates.items():
        owner = next((shipped[f] for f in forms if f in shipped), None)
        if owner is None:
            raise AssertionError(f"no Debian package ships {path}")
        owners[path] = owner
    return owners


class Dpkg:
    """The installed-package database, read once."""

    def __init__(self):
        out = subprocess.run(
            ["dpkg-query", "-W", "-f",
             "${Package}\t${Status}\t${Priority}\t${Depends}\t"
             "${Pre-Depends}\n"],
            capture_output=True, text=True, check=True).stdout
        self.installed, self.priority, self.relations = set(), {}, {}
        for line in out.splitlines():
            name, status, priority, depends, pre_depends = line.split("\t")
            if not status.endswith(" installed"):
                continue
            self.installed.add(name)
            self.priority[name] = priority
            self.relations[name] = depends + "," + pre_depends

    def closure(self, packages):
        """`packages` and all they Depend/Pre-Depend on, as installed here."""
        seen, todo = set(), [p for p in packages if p in self.installed]
        while todo:
            package = todo.pop()
            if package in seen:
                continue
            seen.add(package)
            for alternative in self.relations[package].split(","):
                for choice in alternative.split("|"):
                    name = choice.strip().split(" ")[0].split(":")[0]
                    if name in self.installed:
                        todo.append(name)
                        break
        return seen

    def slim_base(self):
        """What debian:bookworm-slim has before any install: required + apt."""
        return self.closure([p for p, prio in self.priority.items()
                             if prio == "required"] + ["apt"])

    def known(self, package):
        if package in self.installed:
            return True
        proc = subprocess.run(
            ["apt-cache", "show", "--no-all-versions", package],
            capture_output=True, text=True, check=False)
        return proc.returncode == 0 and "Package: " in proc.stdout


def usr_path(path):
    """Where a library path lands in the image (merged /usr)."""
    return path if path.startswith("/usr/") else "/usr" + path


class RuntimeLibrariesTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.dpkg = Dpkg()
        cls.base = cls.dpkg.slim_base()
        cls.tmp = tempfile.TemporaryDirectory()
        out = os.path.join(cls.tmp.name, "out")
        os.makedirs(os.path.join(out, "bin"))
        for binary in BINARIES:
            os.symlink(os.path.abspath(binary),
                       os.path.join(out, "bin", os.path.basename(binary)))
        # quantd is optional in a build without the server: a stand-in that
        # loads what quantctl loads keeps the script's input complete.
        if not os.path.exists(os.path.join(out, "bin", "quantd")):
            os.symlink(os.path.abspath(BINARIES[0]),
                       os.path.join(out, "bin", "quantd"))
        base_list = os.path.join(cls.tmp.name, "base-packages")
        with open(base_list, "w") as f:
            f.write("\n".join(sorted(cls.base)) + "\n")
        env = dict(os.environ)
        if shutil.which("tini") is None:
            # tini is installed in the image's build stage only.
            fake_bin = os.path.join(cls.tmp.name, "bin")
            os.makedirs(fake_bin)
            with open(os.path.join(fake_bin, "tini"), "w") as f:
                f.write("#!/bin/sh\n")
            os.chmod(os.path.join(fake_bin, "tini"), 0o755)
            env["PATH"] = fake_bin + ":" + env["PATH"]
        cls.rootfs = os.path.join(cls.tmp.name, "rootfs")
        cls.proc = subprocess.run(
            [dockerfile_test.RUNTIME_ROOTFS, out, cls.rootfs, base_list],
            capture_output=True, text=True, check=False, env=env,
            timeout=300)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def in_rootfs(self, path):
        return os.path.join(self.rootfs, path.lstrip("/"))

    def test_binaries_were_given_and_built(self):
        self.assertIn("quantctl", [os.path.basename(b) for b in BINARIES])
        for binary in BINARIES:
            self.assertTrue(os.access(binary, os.X_OK),
                            f"{binary} is not built (build before ctest)")

    def test_script_lays_out_the_binaries_and_tini(self):
        self.assertEqual(self.proc.returncode, 0,
                         self.proc.stdout + self.proc.stderr)
        for path in ("/usr/local/bin/quantd", "/usr/local/bin/quantctl",
                     "/usr/bin/tini"):
            self.assertTrue(os.access(self.in_rootfs(path), os.X_OK), path)

    def test_every_library_is_in_the_rootfs_or_the_slim_base(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for binary in BINARIES:
            owners = owning_packages(shared_libraries(binary))
            for library, package in sorted(owners.items()):
                with self.subTest(binary=os.path.basename(binary),
                                  library=library):
                    copied = os.path.isfile(self.in_rootfs(usr_path(library)))
                    if package in self.base:
                        self.assertFalse(copied, f"{library} ({package}) is "
                                         "in the base image already")
                    else:
                        self.assertTrue(copied, f"{library} ({package}) "
                                        "is missing from the rootfs")

    def test_rootfs_holds_regular_files_only(self):
        # Symlinks (alternatives, sonames) are resolved: the image needs no
        # /etc/alternatives entry and no dangling link.
        for root, _, files in os.walk(self.rootfs):
            for name in files:
                path = os.path.join(root, name)
                self.assertFalse(os.path.islink(path), path)

    def test_copied_libraries_come_with_their_copyright(self):
        libraries = set()
        for binary in BINARIES:
            libraries |= set(shared_libraries(binary))
        owners = owning_packages(sorted(libraries))
        for library, package in owners.items():
            if package not in self.base:
                self.assertTrue(os.path.isfile(self.in_rootfs(
                    f"/usr/share/doc/{package}/copyright")), package)


if __name__ == "__main__":
    args = sys.argv[1:]
    split = args.index("--") if "--" in args else len(args)
    BINARIES = args[:split]
    sys.argv = sys.argv[:1] + args[split + 1:]
    for tool in ("ldd", "dpkg-query"):
        deploy_lib.require_tool(tool)
    deploy_lib.main()
