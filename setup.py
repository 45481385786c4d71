"""Build the compiled core.

csrc/ holds the C kernels (no Python API). They are compiled once into a
static library with strict warnings, then linked into each Cython bridge
module under fastkc/_core/. Cython-generated code is compiled without the
strict warning set, because it does not (and need not) pass -Wconversion.

Switches (environment variables):
  FASTKC_DEBUG=1                   -O0 -g and the C invariant checks (FKC_DEBUG)
  FASTKC_SANITIZE=address,undefined  build with ASan/UBSan (run tests with
                                   LD_PRELOAD of libasan, see Makefile)
"""
import glob
import os

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext

DEBUG = os.environ.get("FASTKC_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("FASTKC_SANITIZE", "").strip()

common_cflags = ["-std=c11", "-fno-strict-aliasing"]
ldflags = []
macros = []
if DEBUG or SANITIZE:
    common_cflags += ["-O0", "-g3", "-fno-omit-frame-pointer"]
    macros.append(("FKC_DEBUG", "1"))
else:
    common_cflags += ["-O3"]
if SANITIZE:
    common_cflags += [f"-fsanitize={SANITIZE}", "-fno-sanitize-recover=all"]
    ldflags += [f"-fsanitize={SANITIZE}"]

strict_cflags = common_cflags + [
    "-Wall", "-Wextra", "-Wsign-compare", "-Wconversion", "-Wshadow",
    "-Wstrict-prototypes", "-Werror=implicit-function-declaration",
]
if SANITIZE:
    # CPython's own CFLAGS (which setuptools puts first) carry -fwrapv, under
    # which signed overflow is defined and UBSan does not check it. The
    # kernels never rely on wrapping, so let UBSan see it there.
    strict_cflags.append("-fno-wrapv")

kernel_sources = sorted(glob.glob("csrc/*.c"))
# Every bridge links the kernels statically: relink when any of them changes
# (build_ext only compares a module's own sources otherwise).
kernel_depends = kernel_sources + sorted(glob.glob("csrc/*.h")) + sorted(glob.glob("csrc/*.inc"))


class build_ext(_build_ext):
    # build_ext links -lfastkc_kernels but never builds it; run build_clib
    # first so `setup.py build_ext --inplace` alone works.
    def run(self):
        if self.distribution.has_c_libraries():
            self.run_command("build_clib")
            # relink a bridge whenever the kernels' library is newer than it
            # (a kernel recompiled for a header change, say)
            build_clib = self.get_finalized_command("build_clib")
            for name, _ in self.distribution.libraries:
                archive = os.path.join(build_clib.build_clib, build_clib.compiler.library_filename(name))
                for ext in self.extensions:
                    if archive not in ext.depends:
                        ext.depends.append(archive)
        super().run()

ext_modules = []
for pyx in sorted(glob.glob("fastkc/_core/*.pyx")):
    modname = pyx[:-4].replace("/", ".")
    ext_modules.append(
        Extension(
            modname,
            sources=[pyx],
            depends=kernel_depends,
            include_dirs=["csrc"],
            define_macros=list(macros),
            extra_compile_args=common_cflags + ["-Wno-unused-function"],
            extra_link_args=ldflags,
        )
    )


if not ext_modules:
    # An sdist that lost the .pyx would otherwise install quietly without the
    # compiled core (the twin then answers, slowly): refuse instead.
    raise SystemExit("setup.py: no Cython bridges under fastkc/_core/ (*.pyx); incomplete source tree")


# Cython is a declared build requirement (pyproject.toml) and its generated C
# is not shipped in the sdist (MANIFEST.in excludes it). asyncpg ships the C
# so a build needs no Cython; we don't, because the generated C is tied to the
# Cython release and the CPython versions it knew (C generated today may not
# compile against a CPython released later, which is exactly when someone
# builds from the sdist: every interpreter we test has a wheel), and a shipped
# .c can drift from its .pyx unseen. Cython has wheels for every platform
# CPython runs on, so build isolation fetching it costs one download.
def cythonize_all(exts):
    from Cython.Build import cythonize

    return cythonize(
        exts,
        language_level=3,
        compiler_directives={
            "boundscheck": DEBUG,
            "wraparound": False,
            "cdivision": True,
            "embedsignature": True,
        },
    )


setup(
    cmdclass={"build_ext": build_ext},
    ext_modules=cythonize_all(ext_modules),
    libraries=[
        (
            "fastkc_kernels",
            {
                "sources": kernel_sources,
                # every kernel recompiles when a header changes (without it a
                # changed header left the old objects in the library)
                "obj_deps": {"": kernel_depends},
                "include_dirs": ["csrc"],
                "macros": macros,
                "cflags": strict_cflags,
            },
        )
    ]
    if kernel_sources
    else [],
)
