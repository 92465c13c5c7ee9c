"""deepum's native build cache on the CPU (a stand-in nvcc, or the real one where installed): the cache
key, one build for concurrent builders, clear errors; the cache kept the user's alone (root created
0700; a root, folder or library another user owns or group or others can write refused; the build
log and lock never opened through a symbolic link); and a bundled calibration name that never picks a
file of that name from the working directory."""
from __future__ import annotations

import ctypes
import os
import shutil
import sys
import textwrap
import threading
import types
from pathlib import Path

import pytest

from deepum.offline.calibration import Calibration
from deepum.runtime import native_build

MiB = 1 << 20


# --- cache key, lock, errors -------------------------------------------------------------------

@pytest.fixture
def source_tree(tmp_path, monkeypatch):
    """A private source root holding one library source, and a private cache."""
    root = tmp_path / "src"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "lib.cpp").write_text("int x = 1;\n")
    monkeypatch.setattr(native_build, "SOURCE_ROOT", root)
    monkeypatch.setenv("DEEPUM_CACHE", str(tmp_path / "cache"))
    return root


@pytest.fixture
def fake_nvcc(tmp_path, monkeypatch):
    """An executable named nvcc that logs each compile and writes its -o file (or fails on demand)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "nvcc.log"
    script = bin_dir / "nvcc"
    script.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "fake nvcc 1.0"; exit 0; fi
        if [ -n "$FAKE_NVCC_FAIL" ]; then echo "lib.cpp:1: error: broken" >&2; exit 1; fi
        sleep 0.2
        echo compile >> {log}
        while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then echo built > "$2"; fi; shift; done
        """))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(native_build, "NVCC_FALLBACKS", ())
    native_build.compiler_identity.cache_clear()
    yield log
    native_build.compiler_identity.cache_clear()


LIBRARY = native_build.NativeLibrary("demo", ("kernels/lib.cpp",))


def test_cache_root_follows_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPUM_CACHE", str(tmp_path / "c"))
    assert native_build.cache_root() == tmp_path / "c"
    monkeypatch.delenv("DEEPUM_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert native_build.cache_root() == tmp_path / "x" / "deepum"


def test_build_key_changes_with_every_input(source_tree):
    key = native_build.build_key(LIBRARY, "nvcc 13.0", "2.11.0", "sm_90")
    assert key == native_build.build_key(LIBRARY, "nvcc 13.0", "2.11.0", "sm_90")
    assert key != native_build.build_key(LIBRARY, "nvcc 13.1", "2.11.0", "sm_90")
    assert key != native_build.build_key(LIBRARY, "nvcc 13.0", "2.12.0", "sm_90")
    assert key != native_build.build_key(LIBRARY, "nvcc 13.0", "2.11.0", "sm_100")
    flagged = native_build.NativeLibrary("demo", ("kernels/lib.cpp",), flags=("-lcupti",))
    assert key != native_build.build_key(flagged, "nvcc 13.0", "2.11.0", "sm_90")
    (source_tree / "kernels" / "lib.cpp").write_text("int x = 2;\n")
    assert key != native_build.build_key(LIBRARY, "nvcc 13.0", "2.11.0", "sm_90")


def test_missing_source_is_a_clear_error(source_tree):
    with pytest.raises(native_build.NativeBuildError, match="native source .*missing.txt.* is missing"):
        native_build.build_key(native_build.NativeLibrary("x", ("missing.txt",)), "", "", "")


def test_missing_nvcc_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.setattr(native_build, "NVCC_FALLBACKS", ())
    with pytest.raises(native_build.NativeBuildError, match="needs the CUDA compiler nvcc, which was not found"):
        native_build.build_library(native_build.MANAGED_ALLOCATOR)


def test_cuda_home_takes_precedence(monkeypatch, tmp_path, fake_nvcc):
    cuda_home = tmp_path / "cuda"
    (cuda_home / "bin").mkdir(parents=True)
    shutil.copy(tmp_path / "bin" / "nvcc", cuda_home / "bin" / "nvcc")
    monkeypatch.setenv("CUDA_HOME", str(cuda_home))
    assert native_build.find_nvcc() == cuda_home / "bin" / "nvcc"


def test_build_compiles_once_then_reuses_the_cache(source_tree, fake_nvcc):
    first = native_build.build_library(LIBRARY)
    second = native_build.build_library(LIBRARY)
    assert first == second and first.read_text() == "built\n"
    assert first.parent.parent == native_build.cache_root()
    assert fake_nvcc.read_text().count("compile") == 1
    assert "-arch=sm_90" in (first.parent / "build.log").read_text()


def test_concurrent_builds_compile_once(source_tree, fake_nvcc):
    results = []
    threads = [threading.Thread(target=lambda: results.append(native_build.build_library(LIBRARY)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(results)) == 1 and len(results) == 4
    assert fake_nvcc.read_text().count("compile") == 1


def test_compile_error_names_command_and_output(source_tree, fake_nvcc, monkeypatch):
    monkeypatch.setenv("FAKE_NVCC_FAIL", "1")
    with pytest.raises(native_build.NativeBuildError, match=r"(?s)failed \(exit 1\).*nvcc.*error: broken"):
        native_build.build_library(LIBRARY)
    monkeypatch.delenv("FAKE_NVCC_FAIL")
    assert native_build.build_library(LIBRARY).is_file()  # a failed build leaves nothing half-made


def test_arch_follows_environment(source_tree, fake_nvcc, monkeypatch):
    monkeypatch.setenv("DEEPUM_CUDA_ARCH", "native")
    built = native_build.build_library(LIBRARY)
    assert "-arch=native" in (built.parent / "build.log").read_text()


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_real_nvcc_builds_an_allocator_that_refuses_without_a_fuse(monkeypatch, tmp_path):
    monkeypatch.setenv("DEEPUM_CACHE", str(tmp_path))
    lib = ctypes.CDLL(str(native_build.build_library(native_build.MANAGED_ALLOCATOR)))
    lib.deepum_malloc.restype = ctypes.c_void_p
    lib.deepum_refusals.restype = ctypes.c_uint64
    lib.deepum_last_refused_bytes.restype = ctypes.c_size_t
    # The fuse starts at 0: the request is refused before any CUDA call (none could run here).
    assert lib.deepum_malloc(ctypes.c_ssize_t(MiB), 0, None) is None
    assert lib.deepum_refusals() == 1 and lib.deepum_last_refused_bytes() == MiB


# --- the cache is the user's alone ---------------------------------------------------------------

def test_cache_root_is_created_private(source_tree, fake_nvcc):
    built = native_build.build_library(LIBRARY)
    root = native_build.cache_root()
    assert os.stat(root).st_mode & 0o777 == 0o700
    assert os.stat(built.parent).st_mode & 0o777 == 0o700
    assert os.stat(built).st_mode & 0o022 == 0


def test_a_loose_umask_makes_no_writable_build(source_tree, fake_nvcc):
    previous = os.umask(0o000)
    try:
        built = native_build.build_library(LIBRARY)
    finally:
        os.umask(previous)
    assert os.stat(native_build.cache_root()).st_mode & 0o777 == 0o700
    assert os.stat(built).st_mode & 0o022 == 0 and os.stat(built.parent / "build.log").st_mode & 0o077 == 0


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777])
def test_a_root_group_or_others_can_write_is_refused(source_tree, fake_nvcc, mode):
    root = native_build.cache_root()
    root.mkdir(parents=True)
    root.chmod(mode)
    with pytest.raises(native_build.NativeBuildError, match=rf"cache root {root} can be written by group or others "
                                                            rf"\(mode 0{mode:o}\).*chmod go-w"):
        native_build.build_library(LIBRARY)
    assert not fake_nvcc.exists()  # nothing was compiled


def test_a_root_of_another_user_is_refused(source_tree, fake_nvcc, monkeypatch):
    native_build.cache_root().mkdir(parents=True, mode=0o700)
    monkeypatch.setattr(native_build, "_user", lambda: os.geteuid() + 4242)
    with pytest.raises(native_build.NativeBuildError, match=r"cache root .* belongs to another user.*DEEPUM_CACHE"):
        native_build.build_library(LIBRARY)


def test_a_cached_folder_or_library_others_can_write_is_never_loaded(source_tree, fake_nvcc):
    built = native_build.build_library(LIBRARY)
    built.chmod(0o666)
    with pytest.raises(native_build.NativeBuildError, match=r"cache library .* can be written by group or others"):
        native_build.build_library(LIBRARY)
    built.chmod(0o755)
    built.parent.chmod(0o777)
    with pytest.raises(native_build.NativeBuildError, match=r"cache folder .* can be written by group or others"):
        native_build.build_library(LIBRARY)
    built.parent.chmod(0o700)
    assert native_build.build_library(LIBRARY) == built
    assert fake_nvcc.read_text().count("compile") == 1


def test_a_cached_library_of_another_user_is_never_loaded(source_tree, fake_nvcc, monkeypatch):
    built = native_build.build_library(LIBRARY)
    real = os.stat

    def stat(path, *args, **kwargs):
        info = real(path, *args, **kwargs)
        if str(path) == str(built):
            return os.stat_result((info.st_mode, info.st_ino, info.st_dev, info.st_nlink, info.st_uid + 4242,
                                   *tuple(info)[5:]))
        return info

    monkeypatch.setattr(native_build.os, "stat", stat)
    with pytest.raises(native_build.NativeBuildError, match=r"cache library .* belongs to another user"):
        native_build.build_library(LIBRARY)


@pytest.fixture
def fake_cpp_extension(monkeypatch):
    """torch.utils.cpp_extension stand-in whose load() writes the module file and records the umask."""
    calls = []

    def load(name, build_directory, **kwargs):
        mask = os.umask(0)
        os.umask(mask)
        calls.append({"name": name, "umask": mask})
        library = Path(build_directory) / f"{name}.so"
        library.write_text("built")
        return name

    torch = types.ModuleType("torch")
    torch.utils = types.ModuleType("torch.utils")
    torch.utils.cpp_extension = types.SimpleNamespace(load=load)
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.utils", torch.utils)
    return calls


EXTENSION = native_build.TorchExtension("demo_ext", ("kernels/lib.cpp",))


def test_the_extension_builds_in_a_private_folder_and_a_writable_one_is_never_loaded(source_tree, fake_nvcc,
                                                                                      fake_cpp_extension):
    name = native_build.load_torch_extension(EXTENSION)
    folder = next(native_build.cache_root().glob("demo_ext-*"))
    assert os.stat(folder).st_mode & 0o777 == 0o700 and fake_cpp_extension[0]["umask"] & 0o022 == 0o022
    library = folder / f"{name}.so"
    library.chmod(0o664)
    with pytest.raises(native_build.NativeBuildError, match=r"cache library .* can be written by group or others"):
        native_build.load_torch_extension(EXTENSION)
    library.chmod(0o644)
    folder.chmod(0o775)
    with pytest.raises(native_build.NativeBuildError, match=r"cache folder .* can be written by group or others"):
        native_build.load_torch_extension(EXTENSION)
    assert len(fake_cpp_extension) == 1


def test_the_build_log_is_never_written_through_a_symbolic_link(source_tree, fake_nvcc, tmp_path):
    key = native_build.build_key(LIBRARY, native_build.compiler_identity(native_build.find_nvcc()),
                                 native_build.torch_version(), native_build.cuda_arch())
    folder = native_build.cache_root() / f"{LIBRARY.name}-{key}"
    folder.mkdir(parents=True, mode=0o700)
    native_build.cache_root().chmod(0o700)
    target = tmp_path / "victim.txt"
    target.write_text("keep me\n")
    (folder / "build.log").symlink_to(target)
    with pytest.raises(native_build.NativeBuildError, match=r"build log .*build.log is a symbolic link"):
        native_build.build_library(LIBRARY)
    assert target.read_text() == "keep me\n"
    assert not (folder / f"lib{LIBRARY.name}.so").exists()


def test_the_build_lock_is_never_opened_through_a_symbolic_link(source_tree, fake_nvcc, tmp_path):
    key = native_build.build_key(LIBRARY, native_build.compiler_identity(native_build.find_nvcc()),
                                 native_build.torch_version(), native_build.cuda_arch())
    root = native_build.cache_root()
    root.mkdir(parents=True, mode=0o700)
    (root / f"{LIBRARY.name}-{key}.lock").symlink_to(tmp_path / "elsewhere.lock")
    with pytest.raises(native_build.NativeBuildError, match=r"build lock .* is a symbolic link"):
        native_build.build_library(LIBRARY)
    assert not (tmp_path / "elsewhere.lock").exists()


# --- a calibration name never picks a file from the working directory ----------------------------

def test_a_bare_calibration_name_is_the_bundled_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "h200").write_text("{not json")
    (tmp_path / "h200.json").write_text("{not json")
    bundled = Calibration.load("h200")
    assert bundled == Calibration.load() and "H200" in bundled.device
    for path in ("./h200", "h200.json", tmp_path / "h200"):
        with pytest.raises(ValueError, match="calibration file .* is not valid JSON"):
            Calibration.load(path)


def test_an_unknown_bare_calibration_name_says_how_to_name_a_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").write_text("{}")
    with pytest.raises(ValueError, match=r"no bundled calibration named 'mine' \(bundled: h200\); .*\./mine"):
        Calibration.load("mine")


def test_the_engine_build_key_covers_every_header_it_includes():
    """A header the online engine includes but its source list leaves out would not rebuild a cached
    engine when it changes."""
    import re

    listed = set(native_build.ONLINE_ENGINE.sources)
    root = native_build.SOURCE_ROOT
    seen, todo = set(), [s for s in listed if s.endswith(".cpp")]
    while todo:
        source = todo.pop()
        if source in seen:
            continue
        seen.add(source)
        for name in re.findall(r'#include "([^"]+)"', (root / source).read_text()):
            todo.append(f"driver_hooks/{name}")
    assert seen <= listed, sorted(seen - listed)
