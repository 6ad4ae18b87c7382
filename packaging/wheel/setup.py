"""Only what pyproject.toml cannot say: the wheel carries native binaries.

setuptools makes a wheel with no extension modules pure (py3-none-any, files
in purelib), which auditwheel refuses to look at. The binaries run on one
platform but under any Python 3, so the distribution counts as having native
code and the tag is py3-none-<platform>; auditwheel then narrows the platform
to the manylinux tag the binaries' symbol versions allow.
"""
from setuptools import setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.dist import Distribution


class NativeDistribution(Distribution):
    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=NativeDistribution, cmdclass={"bdist_wheel": PlatformWheel})
