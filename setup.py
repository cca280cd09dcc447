"""Packages of the `lockstep` namespace: the repository's top-level folders, installed under `lockstep.`."""

from setuptools import find_packages, setup

FOLDERS = ("specs", "checker", "executors", "proofs")

packages = ["lockstep"] + [f"lockstep.{sub}" for sub in find_packages("lockstep")] + [f"lockstep.{top}" for top in FOLDERS] + [
    f"lockstep.{top}.{sub}" for top in FOLDERS for sub in find_packages(top)
]
setup(packages=packages, package_dir={"lockstep": "lockstep", **{f"lockstep.{top}": top for top in FOLDERS}})
