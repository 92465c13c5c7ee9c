"""Compile-on-first-use of deepum's CUDA libraries, cached on disk.

A library is built once per distinct (sources, flags, nvcc version, torch version) into
`<cache root>/<name>-<key>/`, where the cache root is `$DEEPUM_CACHE`, else
`$XDG_CACHE_HOME/deepum`, else `~/.cache/deepum`. A file lock makes concurrent processes wait for
one build instead of racing; the finished file is moved into place atomically.

Two kinds of library:
- `NativeLibrary`: plain C/C++/CUDA sources compiled by nvcc into a shared library loaded with
  ctypes (the managed-memory allocator; it links the CUDA runtime statically and needs no torch).
- `TorchExtension`: a PyTorch C++ extension built with torch.utils.cpp_extension.load, for code
  that calls into libtorch (the caching-allocator trace hook).

The cache holds native code the process will load, so it must be the user's alone: the cache root is
created with mode 0700, and a cache root, build folder or library that another user owns or that
group or others can write to is refused with an error that says how to fix it (deepum neither loads
it nor rebuilds beside it: another user's files are no place to put one's own either). The build log
and lock files are opened without following symbolic links.
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import functools
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

def _source_root() -> Path:
    package = Path(__file__).resolve().parent.parent  # deepum/ (this module is deepum/runtime/native_build.py)
    checkout = package.parent
    if (checkout / "driver_hooks").is_dir() and (checkout / "kernels").is_dir():
        return checkout
    return package / "native_src"  # an installed package (setup.py copies them)


SOURCE_ROOT = _source_root()
"""Directory the `sources` of each library are relative to: the repository root in a checkout,
deepum/native_src in an installed package."""

NVCC_FALLBACKS = ("/usr/local/cuda/bin/nvcc",)
"""Places nvcc is looked for after $CUDA_HOME/bin and $PATH."""

DEFAULT_CUDA_ARCH = "sm_90"
"""GPU architecture passed to nvcc (-arch) unless $DEEPUM_CUDA_ARCH names another (e.g. native)."""

BUILD_TIMEOUT_S = 600


class NativeBuildError(RuntimeError):
    """A native library could not be built (no nvcc, missing sources, a compile error, or a build
    cache that is not the user's alone)."""


@dataclasses.dataclass(frozen=True)
class NativeLibrary:
    """A shared library built by nvcc. sources: paths relative to SOURCE_ROOT; flags: extra nvcc
    flags (e.g. ("-lcupti",)); the library file is lib<name>.so."""

    name: str
    sources: tuple[str, ...]
    flags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class TorchExtension:
    """A PyTorch C++ extension (pybind11 module) built by torch.utils.cpp_extension.load.
    include_dirs: relative to SOURCE_ROOT; uses_cupti: compile and link against CUPTI."""

    name: str
    sources: tuple[str, ...]
    flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    uses_cupti: bool = False


MANAGED_ALLOCATOR = NativeLibrary("managed_allocator", ("kernels/managed_allocator.cpp",))
ONLINE_ENGINE = TorchExtension("online_engine", (
    "driver_hooks/online_bindings.cpp", "driver_hooks/launch_hook.cpp", "driver_hooks/allocator_hook.cpp",
    "driver_hooks/fault_log.cpp", "driver_hooks/online.hpp", "driver_hooks/engine.hpp", "driver_hooks/event_pool.hpp",
    "driver_hooks/worker.hpp", "driver_hooks/engine_memory.hpp", "driver_hooks/move_pool.hpp",
    "driver_hooks/hand_over.hpp", "driver_hooks/host_words.hpp", "driver_hooks/stream_marks.hpp",
    "driver_hooks/uvm_ioctl.hpp", "driver_hooks/commands.hpp", "driver_hooks/counters.hpp", "driver_hooks/memory_map.hpp",
    "driver_hooks/segment_table.hpp",
    "driver_hooks/recorder.hpp", "driver_hooks/launch_accesses.hpp", "driver_hooks/policy.hpp", "driver_hooks/options.hpp",
    "driver_hooks/options_binding.hpp", "driver_hooks/units.hpp", "driver_hooks/block_list.hpp",
    "driver_hooks/replacement.hpp", "driver_hooks/prefetcher.hpp", "driver_hooks/next_use.hpp",
    "driver_hooks/iteration_uses.hpp",
    "driver_hooks/predictor.hpp", "driver_hooks/correlation.hpp", "driver_hooks/block_table.hpp",
    "driver_hooks/fault_injection.hpp", "driver_hooks/schedule.hpp", "driver_hooks/plan_records.hpp",
    "driver_hooks/state_io.hpp",
    "driver_hooks/state_binding.hpp", "driver_hooks/sleep_gate.hpp", "driver_hooks/iteration_bins.hpp",
    "driver_hooks/iteration_bins_binding.hpp", "driver_hooks/tensor_lists.hpp", "driver_hooks/indexed_kernels.hpp",
    "driver_hooks/timeline.hpp", "driver_hooks/fill_kernels.hpp", "driver_hooks/kernel_marks.hpp"),
                               flags=("-std=c++17",), include_dirs=("driver_hooks",), uses_cupti=True)

INJECT_FAULTS_VARIABLE = "DEEPUM_INJECT_FAULTS"


def online_engine() -> TorchExtension:
    """The online engine to load: ONLINE_ENGINE, or, when the environment variable
    DEEPUM_INJECT_FAULTS=N is set, its fault-injection build (every Nth guarded CUDA call fails;
    cached apart, driver_hooks/fault_injection.hpp)."""
    every = os.environ.get(INJECT_FAULTS_VARIABLE, "").strip()
    if not every:
        return ONLINE_ENGINE
    if not every.isdigit() or int(every) < 1:
        raise ValueError(f"{INJECT_FAULTS_VARIABLE} must be a whole number of calls, 1 or more, got {every!r}")
    return dataclasses.replace(ONLINE_ENGINE, flags=(*ONLINE_ENGINE.flags, f"-DDEEPUM_INJECT_FAULTS={int(every)}"))


def find_cupti(nvcc: Path) -> tuple[Path, Path]:
    """(include dir, library dir) of CUPTI: the CUDA toolkit's extras/CUPTI, else the
    nvidia-cuda-cupti wheel that PyTorch installs."""
    toolkit = nvcc.resolve().parent.parent
    candidates = [(toolkit / "extras" / "CUPTI" / "include", toolkit / "extras" / "CUPTI" / "lib64"),
                  (toolkit / "include", toolkit / "lib64")]
    try:
        import nvidia  # namespace package of NVIDIA's wheels

        for root in map(Path, nvidia.__path__):
            for package in ("cu13", "cuda_cupti"):
                candidates.append((root / package / "include", root / package / "lib"))
    except ImportError:
        pass
    for include, lib in candidates:
        if (include / "cupti.h").is_file() and any(lib.glob("libcupti.so*")):
            return include, lib
    raise NativeBuildError("deepum's fault log needs CUPTI (cupti.h and libcupti.so), found in neither the "
                           "CUDA toolkit's extras/CUPTI nor the nvidia-cuda-cupti wheel; install one of them")


def cache_root() -> Path:
    """Directory that holds every build: $DEEPUM_CACHE, $XDG_CACHE_HOME/deepum or ~/.cache/deepum."""
    if os.environ.get("DEEPUM_CACHE"):
        return Path(os.environ["DEEPUM_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "deepum"


def _user() -> int:
    """The user whose cache this is (the effective user id)."""
    return os.geteuid()


def check_private(path: Path, what: str) -> None:
    """NativeBuildError unless `path` (followed if a link) is owned by the user and cannot be written
    by group or others: deepum loads native code only from a cache no one else can change."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise NativeBuildError(f"cannot inspect deepum's build cache {what} {path}: {exc.strerror or exc}") from exc
    if info.st_uid != _user():
        raise NativeBuildError(
            f"deepum's build cache {what} {path} belongs to another user (uid {info.st_uid}, you are {_user()}): "
            f"deepum loads native code only from a cache of your own. Set DEEPUM_CACHE to a folder of yours, "
            f"or remove {path}.")
    if info.st_mode & 0o022:
        raise NativeBuildError(
            f"deepum's build cache {what} {path} can be written by group or others (mode "
            f"{info.st_mode & 0o7777:04o}): deepum loads native code only from a cache no one else can "
            f"change. Run `chmod go-w {path}`, or set DEEPUM_CACHE to a private folder.")


def _private_folder(folder: Path, what: str) -> Path:
    """`folder`, created with mode 0700 if absent (its parents as the umask says), then checked."""
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise NativeBuildError(f"cannot create deepum's build cache {what} {folder}: {exc.strerror or exc}") from exc
    check_private(folder, what)
    return folder


def private_cache_root() -> Path:
    """cache_root(), created with mode 0700 if absent; NativeBuildError when it is not the user's alone."""
    return _private_folder(cache_root(), "root")


def _open_no_follow(path: Path, flags: int, what: str) -> int:
    """os.open of a file in the cache that refuses to follow a symbolic link (mode 0600 when created)."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise NativeBuildError(f"deepum's {what} {path} is a symbolic link; deepum does not write through "
                                   f"one in its build cache. Remove it.") from exc
        raise NativeBuildError(f"cannot open deepum's {what} {path}: {exc.strerror or exc}") from exc


@contextlib.contextmanager
def _umask_without_group_or_other_write():
    """While a build runs, what it creates cannot be written by group or others whatever the umask
    (which a later check_private() would otherwise refuse)."""
    previous = os.umask(0o022)
    os.umask(previous | 0o022)
    try:
        yield
    finally:
        os.umask(previous)


def write_build_log(path: Path, text: str) -> None:
    """Writes the build log, never through a symbolic link."""
    fd = _open_no_follow(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, "build log")
    with os.fdopen(fd, "w") as log:
        log.write(text)


def find_nvcc() -> Path:
    """Path of nvcc: $CUDA_HOME/bin/nvcc, then $PATH, then NVCC_FALLBACKS."""
    candidates = []
    if os.environ.get("CUDA_HOME"):
        candidates.append(Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc")
    on_path = shutil.which("nvcc")
    if on_path:
        candidates.append(Path(on_path))
    candidates.extend(Path(p) for p in NVCC_FALLBACKS)
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise NativeBuildError(
        "deepum builds its managed-memory allocator on first use and needs the CUDA compiler nvcc, "
        "which was not found ($CUDA_HOME/bin, $PATH, " + ", ".join(NVCC_FALLBACKS) + "). Install the "
        "CUDA toolkit (13.x, matching PyTorch's CUDA) or set CUDA_HOME to it.")


@functools.lru_cache(maxsize=None)
def compiler_identity(nvcc: Path) -> str:
    """`nvcc --version` output: part of the cache key, so a new toolkit rebuilds."""
    try:
        done = subprocess.run([str(nvcc), "--version"], capture_output=True, text=True, timeout=60)
    except OSError as exc:
        raise NativeBuildError(f"cannot run {nvcc}: {exc}") from exc
    if done.returncode != 0:
        raise NativeBuildError(f"{nvcc} --version failed: {done.stderr.strip()}")
    return done.stdout.strip()


def torch_version() -> str:
    """Installed torch version, read from package metadata without importing torch ("none" if absent)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "none"


def cuda_arch() -> str:
    return os.environ.get("DEEPUM_CUDA_ARCH", DEFAULT_CUDA_ARCH)


def source_paths(library: NativeLibrary | TorchExtension) -> list[Path]:
    """Absolute source paths; NativeBuildError naming the first one missing."""
    paths = [SOURCE_ROOT / source for source in library.sources]
    for path in paths:
        if not path.is_file():
            raise NativeBuildError(
                f"native source {path} of deepum's {library.name} library is missing: deepum builds "
                f"it from the source tree, so run from a checkout (or an install that keeps kernels/ "
                f"and driver_hooks/ beside the deepum package)")
    return paths


def build_key(library: NativeLibrary | TorchExtension, compiler: str, torch: str, arch: str) -> str:
    """Hex digest over the library's name, source contents, flags, compiler identity, torch version
    and GPU architecture: equal keys mean an existing build can be reused."""
    digest = hashlib.sha256()
    for part in (type(library).__name__, library.name, *library.flags, compiler, torch, arch):
        digest.update(part.encode())
        digest.update(b"\0")
    for path in source_paths(library):
        digest.update(str(path.relative_to(SOURCE_ROOT)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def nvcc_command(library: NativeLibrary, nvcc: Path, output: Path, arch: str) -> list[str]:
    """The nvcc command line that builds `library` into `output`."""
    return [str(nvcc), "-shared", "-Xcompiler", "-fPIC", "-O2", "-std=c++17", f"-arch={arch}",
            "-o", str(output), *(str(p) for p in source_paths(library)), *library.flags]


class _FileLock:
    """Exclusive advisory lock on a file (fcntl.flock): one builder per key across processes."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        self._file = os.fdopen(_open_no_follow(self.path, os.O_RDWR | os.O_CREAT, "build lock"), "a+")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self._file, fcntl.LOCK_UN)
        self._file.close()


def build_library(library: NativeLibrary) -> Path:
    """Path of the built shared library, compiling it first if no cached build matches."""
    nvcc = find_nvcc()
    arch = cuda_arch()
    key = build_key(library, compiler_identity(nvcc), torch_version(), arch)
    root = private_cache_root()
    directory = root / f"{library.name}-{key}"
    output = directory / f"lib{library.name}.so"
    if output.is_file():
        return _checked_build(directory, output)
    with _FileLock(root / f"{library.name}-{key}.lock"):
        if output.is_file():  # another process built it while we waited
            return _checked_build(directory, output)
        _private_folder(directory, "folder")
        with tempfile.TemporaryDirectory(dir=directory) as scratch:
            partial = Path(scratch) / output.name
            command = nvcc_command(library, nvcc, partial, arch)
            try:
                with _umask_without_group_or_other_write():
                    done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise NativeBuildError(f"building deepum's {library.name} library failed: {exc}") from exc
            write_build_log(directory / "build.log", " ".join(command) + "\n" + done.stdout + done.stderr)
            if done.returncode != 0:
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-30:])
                raise NativeBuildError(f"building deepum's {library.name} library failed "
                                       f"(exit {done.returncode}):\n$ {' '.join(command)}\n{tail}")
            os.chmod(partial, 0o755)
            os.replace(partial, output)
    return _checked_build(directory, output)


def _checked_build(directory: Path, library: Path) -> Path:
    """`library` once it and its folder are found to be the user's alone."""
    check_private(directory, "folder")
    check_private(library, "library")
    return library


def load_torch_extension(extension: TorchExtension):
    """The imported extension module, built first if no cached build matches (needs torch; the
    first build takes tens of seconds)."""
    try:
        from torch.utils import cpp_extension
    except ImportError as exc:
        raise NativeBuildError(f"deepum's {extension.name} extension needs PyTorch") from exc
    nvcc = find_nvcc()  # cpp_extension needs the CUDA toolkit headers that come with nvcc
    key = build_key(extension, compiler_identity(nvcc), torch_version(), "")
    directory = _private_folder(private_cache_root() / f"{extension.name}-{key}", "folder")
    module_name = f"deepum_{extension.name}_{key}"
    if (directory / f"{module_name}.so").exists():
        check_private(directory / f"{module_name}.so", "library")
    includes = [str(nvcc.resolve().parent.parent / "include"), *(str(SOURCE_ROOT / d) for d in extension.include_dirs)]
    ldflags = ["-lcuda"]
    if extension.uses_cupti:
        cupti_include, cupti_lib = find_cupti(nvcc)
        includes.append(str(cupti_include))
        cupti_so = sorted(cupti_lib.glob("libcupti.so*"))[0]
        ldflags += [f"-L{cupti_lib}", f"-l:{cupti_so.name}", f"-Wl,-rpath,{cupti_lib}"]
    try:
        # cpp_extension.load locks the build directory itself and reuses a finished build.
        with _umask_without_group_or_other_write():
            return cpp_extension.load(name=module_name,
                                      sources=[str(p) for p in source_paths(extension) if p.suffix != ".hpp"],
                                      extra_cflags=["-O2", *extension.flags], extra_include_paths=includes,
                                      extra_ldflags=ldflags,
                                      build_directory=str(directory), with_cuda=True, verbose=False)
    except Exception as exc:  # cpp_extension raises RuntimeError / CalledProcessError / OSError
        raise NativeBuildError(f"building deepum's {extension.name} extension failed in {directory}: "
                               f"{exc}") from exc
