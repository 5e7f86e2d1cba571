#!/usr/bin/python3
"""deploy/ against the server it deploys: the container recipe's runtime
packages provide every library llmrun loads and its entrypoint serves; the
Kubernetes manifests' and the Helm chart's arguments are options llmrun
takes, their probes the routes that answer them, their ports one another's,
and the metrics the endpoint picker is told to read ones the server exports.
No container runtime, cluster or helm is needed; nor does this build the
image or render the chart.

Usage: deploy_test.py <llmrun> <bundle>
"""

import os
import re
import shlex
import subprocess
import sys
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "server"))
from server_process import ServerProcess, kv_block_size  # noqa: E402

DEPLOY = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy")
LLMRUN = BUNDLE = None
# What debian:12-slim has without installing anything.
SLIM_BASE = {"libc6", "libgcc-s1", "libstdc++6"}


def read(*path):
    with open(os.path.join(DEPLOY, *path)) as f:
        return f.read()


def dockerfile_stages():
    """{stage name: [instruction lines, continuations joined]}."""
    stages, current = {}, None
    for line in read("Dockerfile").replace("\\\n", " ").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"FROM \S+ AS (\S+)", line)
        if match:
            current = stages.setdefault(match.group(1), [])
        current.append(line)
    return stages


def package_of(library_path):
    """The package that installed a library, under either of the paths
    Debian's merged /usr gives it."""
    real = os.path.realpath(library_path)
    for path in (library_path, real, re.sub(r"^/usr/lib/", "/lib/", real)):
        found = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True)
        if found.returncode == 0:
            return found.stdout.split(":")[0]
    raise AssertionError(f"no package owns {library_path}")


def needed_packages(binary):
    """The Debian packages of the libraries `binary` names (DT_NEEDED)."""
    needed = re.findall(r"\(NEEDED\).*\[(.+)\]",
                        subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                                       check=True).stdout)
    paths = dict(re.findall(r"^\s*(\S+) => (\S+)",
                            subprocess.run(["ldd", binary], capture_output=True, text=True,
                                           check=True).stdout, re.M))
    return {package_of(paths[lib]) for lib in needed if lib in paths}


def manifests(*path):
    return [doc for doc in yaml.safe_load_all(read(*path)) if doc]


def of_kind(docs, kind, name=None):
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, (kind, name, len(found))
    return found[0]


class Serving(unittest.TestCase):
    """Starts llmrun with a deployment's arguments and checks what it says."""

    def serve(self, args):
        # The test's bundle, loopback and a free port: given last, they win.
        args = [a.replace("$(POD_IP)", "10.0.0.1") for a in args]
        return ServerProcess(LLMRUN, BUNDLE, *args, "--host", "127.0.0.1", "--port", "0")

    def assert_probe(self, server, path):
        status, _, body = server.request("GET", path)
        self.assertEqual(status, 200, (path, body))


class ContainerRecipe(Serving):
    def test_runtime_packages_provide_what_llmrun_loads(self):
        runtime = " ".join(dockerfile_stages()["runtime"])
        installed = set(re.search(r"apt-get install -y --no-install-recommends ([^&]+)",
                                  runtime).group(1).split())
        missing = needed_packages(LLMRUN) - installed - SLIM_BASE
        self.assertFalse(missing, f"deploy/Dockerfile's runtime stage lacks {missing}")

    def test_entrypoint_serves_and_the_healthcheck_asks_it(self):
        runtime = dockerfile_stages()["runtime"]
        entry = next(l for l in runtime if l.startswith("ENTRYPOINT"))
        argv = yaml.safe_load(entry[len("ENTRYPOINT"):])
        self.assertEqual(argv[:3], ["llmrun", "serve", "/models/model.llmb"])
        port = argv[argv.index("--port") + 1]
        check = next(l for l in runtime if l.startswith("HEALTHCHECK"))
        self.assertIn(f"http://127.0.0.1:{port}/health", check)
        exposed = next(l for l in runtime if l.startswith("EXPOSE")).split()[1:]
        self.assertIn(port, exposed)
        with self.serve(argv[3:]) as server:
            self.assert_probe(server, "/health")
        serve_stage = dockerfile_stages()["serve"]
        self.assertIn("COPY --from=model /models /models", serve_stage)
        model = " ".join(dockerfile_stages()["model"])
        self.assertIn("-o /models/model.llmb --embed-weights", model)


class Kubernetes(Serving):
    @classmethod
    def setUpClass(cls):
        cls.docs = manifests("kubernetes", "llmserve.yaml") + manifests("kubernetes", "inferencepool.yaml")

    def test_replicas_serve_with_their_arguments_and_probes(self):
        deployment = of_kind(self.docs, "Deployment", "llmserve")
        pod = deployment["spec"]["template"]
        container = pod["spec"]["containers"][0]
        args = container["args"]
        grace = int(next(a for a in args if a.startswith("--shutdown-grace=")).split("=")[1])
        self.assertGreater(pod["spec"]["terminationGracePeriodSeconds"], grace)
        (port,) = [p for p in container["ports"] if p["name"] == "http"]
        self.assertEqual(port["containerPort"], 8000)
        probes = {name: container[name]["httpGet"]["path"]
                  for name in ("startupProbe", "livenessProbe", "readinessProbe")}
        self.assertEqual(probes, {"startupProbe": "/health", "livenessProbe": "/health",
                                  "readinessProbe": "/ready"})
        with self.serve(args) as server:
            for path in set(probes.values()):
                self.assert_probe(server, path)
            self.assertIn("KV events on tcp://llmserve-epp:5557, topic 'kv@10.0.0.1:8000@kjv-devil-tiny'",
                          server.output())
            metrics = server.metrics()
        service = of_kind(self.docs, "Service", "llmserve")
        self.assertEqual(service["spec"]["selector"], deployment["spec"]["selector"]["matchLabels"])
        self.check_pool(metrics, deployment)

    def check_pool(self, metrics, deployment):
        pool = of_kind(self.docs, "InferencePool", "llmserve")
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        self.assertLessEqual(pool["spec"]["selector"]["matchLabels"].items(), labels.items())
        self.assertEqual(pool["spec"]["targetPorts"], [{"number": 8000}])
        picker = pool["spec"]["endpointPickerRef"]
        epp_service = of_kind(self.docs, "Service", picker["name"])
        self.assertIn(picker["port"]["number"], [p["port"] for p in epp_service["spec"]["ports"]])
        # The replicas connect to the picker's KV-event port.
        self.assertIn(5557, [p["port"] for p in epp_service["spec"]["ports"]])
        # Every metric the picker is told to read is one the replicas export.
        epp = of_kind(self.docs, "Deployment", picker["name"])["spec"]["template"]["spec"]["containers"][0]
        named = [a.split("=", 1)[1] for a in epp["args"] if re.match(r"--[a-z-]+-metric=.", a)]
        self.assertEqual(len(named), 4)
        exported = {name.split("{")[0] for name in metrics}
        for metric in named:
            self.assertIn(metric, exported)
        # The scorer hashes blocks as the replicas do: their block size, the
        # default (empty) hash seed.
        config = yaml.safe_load(of_kind(self.docs, "ConfigMap", picker["name"])["data"]["epp-config.yaml"])
        scorer = next(p for p in config["plugins"] if p["type"] == "precise-prefix-cache-scorer")
        tokens = scorer["parameters"]["indexerConfig"]["tokenProcessorConfig"]
        self.assertEqual(tokens["blockSize"], kv_block_size(metrics))
        self.assertEqual(tokens["hashSeed"], "")
        route = of_kind(self.docs, "HTTPRoute", "llmserve")
        self.assertEqual(route["spec"]["rules"][0]["backendRefs"][0]["name"], pool["metadata"]["name"])


class HelmChart(Serving):
    def test_templates_use_only_values_that_exist(self):
        values = yaml.safe_load(read("helm", "llmserve", "values.yaml"))
        chart = yaml.safe_load(read("helm", "llmserve", "Chart.yaml"))
        self.assertEqual(chart["apiVersion"], "v2")
        templates = os.path.join(DEPLOY, "helm", "llmserve", "templates")
        for name in os.listdir(templates):
            with open(os.path.join(templates, name)) as f:
                text = f.read()
            for path in re.findall(r"\.Values((?:\.\w+)+)", text):
                node = values
                for key in path.strip(".").split("."):
                    self.assertIn(key, node, f"{name}: .Values{path}")
                    node = node[key]

    def test_chart_arguments_and_metrics_are_the_manifests(self):
        """The chart says what the plain manifests say, which the test above
        checks against a running server."""
        chart = read("helm", "llmserve", "templates", "inferencepool.yaml")
        plain = read("kubernetes", "inferencepool.yaml")
        metric_flags = re.compile(r"--[a-z-]+-metric=\S*")
        self.assertEqual(metric_flags.findall(chart), metric_flags.findall(plain))
        deployment = read("helm", "llmserve", "templates", "deployment.yaml")
        for probe in ("path: /health", "path: /ready"):
            self.assertIn(probe, deployment)
        # Each literal option the template passes is one llmrun serve takes.
        help_text = subprocess.run([LLMRUN, "serve", "--help"], capture_output=True, text=True).stdout
        for option in set(re.findall(r"- (--[a-z-]+)=", deployment)):
            self.assertIn(option, help_text)


if __name__ == "__main__":
    LLMRUN, BUNDLE = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1], verbosity=2)
