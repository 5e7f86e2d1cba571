# lit configuration of the compiler tests. Run it through the build tree
# (`lit -sv build/test/lit`, or `ctest -R '^lit$'`), which knows where the
# tools are.
import os

import lit.formats

config.name = "llmserve"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.llmserve_binary_dir, "test", "lit")

# FileCheck, not and count come from LLVM; our tools only through the
# substitutions below, so that no RUN line runs them unguarded.
config.environment["PATH"] = os.pathsep.join(
    [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])]
)

# A bad rewrite can loop or eat all memory. Each tool runs with a CPU-time
# and an address-space limit; exceeding either kills it with a signal, which
# `not` reports as a crash (unlike timeout(1), whose exit status `not` would
# take for the expected failure). Wall-clock hangs are caught by lit's
# per-test timeout, which needs psutil (python3-psutil, in
# tools/install-deps.sh).
LIMITS = "prlimit --cpu=60 --as={} --".format(4 << 30)
lit_config.maxIndividualTestTime = 120

for tool in ["llmserve-opt", "llmc"]:
    config.substitutions.append(
        ("%" + tool, "{} {}".format(LIMITS, os.path.join(config.llmserve_tools_dir, tool)))
    )

# ptxas (CUDA toolkit) assembles and checks the NVIDIA kernels where it is
# installed; tests that need it say `REQUIRES: ptxas`.
import shutil

ptxas = shutil.which("ptxas") or shutil.which("ptxas", path="/usr/local/cuda/bin")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
