"""examples/deploy: the generated base is current, the overlay lists it, and the Argo CD and
Flux objects use only fields their projects document (their CRDs are not on the test server).

The schemas below are derived from the documented fields, not from the CRDs themselves:
Argo CD "Declarative Setup" and the Application spec reference
(https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/,
https://argo-cd.readthedocs.io/en/stable/user-guide/application-specification/); Flux
Kustomization v1 and GitRepository v1
(https://fluxcd.io/flux/components/kustomize/kustomizations/,
https://fluxcd.io/flux/components/source/gitrepositories/). additionalProperties: false
everywhere, so a misspelt or undocumented field fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "examples" / "deploy"


def _obj(props: dict, required: list[str]) -> dict:
    return {"type": "object", "additionalProperties": False, "required": required,
            "properties": props}


STR = {"type": "string", "minLength": 1}
META = _obj({"name": STR, "namespace": STR, "labels": {"type": "object"},
             "annotations": {"type": "object"}, "finalizers": {"type": "array"}}, ["name"])
DURATION = {"type": "string", "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"}

ARGO_APPLICATION = _obj({
    "apiVersion": {"const": "argoproj.io/v1alpha1"}, "kind": {"const": "Application"},
    "metadata": META,
    "spec": _obj({
        "project": STR,
        "source": _obj({"repoURL": STR, "targetRevision": STR, "path": STR,
                        "kustomize": {"type": "object"}, "directory": {"type": "object"}},
                       ["repoURL"]),
        "destination": _obj({"server": STR, "name": STR, "namespace": STR}, []),
        "syncPolicy": _obj({
            "automated": _obj({"prune": {"type": "boolean"}, "selfHeal": {"type": "boolean"},
                               "allowEmpty": {"type": "boolean"}}, []),
            "syncOptions": {"type": "array", "items": {"type": "string",
                                                       "pattern": r"^[A-Za-z]+=[a-z]+$"}},
            "retry": {"type": "object"}}, []),
        "revisionHistoryLimit": {"type": "integer"},
    }, ["project", "source", "destination"]),
}, ["apiVersion", "kind", "metadata", "spec"])

FLUX_GIT_REPOSITORY = _obj({
    "apiVersion": {"const": "source.toolkit.fluxcd.io/v1"}, "kind": {"const": "GitRepository"},
    "metadata": META,
    "spec": _obj({"interval": DURATION, "url": STR, "timeout": DURATION,
                  "ref": _obj({"branch": STR, "tag": STR, "semver": STR, "name": STR,
                               "commit": STR}, []),
                  "secretRef": _obj({"name": STR}, ["name"]), "suspend": {"type": "boolean"}},
                 ["interval", "url"]),
}, ["apiVersion", "kind", "metadata", "spec"])

FLUX_KUSTOMIZATION = _obj({
    "apiVersion": {"const": "kustomize.toolkit.fluxcd.io/v1"}, "kind": {"const": "Kustomization"},
    "metadata": META,
    "spec": _obj({"interval": DURATION, "retryInterval": DURATION, "timeout": DURATION,
                  "sourceRef": _obj({"kind": {"enum": ["GitRepository", "OCIRepository",
                                                       "Bucket"]},
                                     "name": STR, "namespace": STR}, ["kind", "name"]),
                  "path": STR, "prune": {"type": "boolean"}, "wait": {"type": "boolean"},
                  "targetNamespace": STR, "serviceAccountName": STR,
                  "suspend": {"type": "boolean"}, "force": {"type": "boolean"}},
                 ["interval", "sourceRef", "prune"]),
}, ["apiVersion", "kind", "metadata", "spec"])


def test_argo_cd_application_uses_documented_fields_and_points_at_the_overlay() -> None:
    """The Application validates against the documented fields; its path is examples/deploy."""
    app = yaml.safe_load((DEPLOY / "argocd-application.yaml").read_text())
    jsonschema.validate(app, ARGO_APPLICATION)
    assert app["spec"]["source"]["path"] == "examples/deploy"


def test_flux_objects_use_documented_fields_and_point_at_the_overlay() -> None:
    """GitRepository and Kustomization validate; the Kustomization uses that source and path."""
    repo, kustomization = yaml.safe_load_all((DEPLOY / "flux-kustomization.yaml").read_text())
    jsonschema.validate(repo, FLUX_GIT_REPOSITORY)
    jsonschema.validate(kustomization, FLUX_KUSTOMIZATION)
    assert kustomization["spec"]["sourceRef"] == {"kind": "GitRepository",
                                                  "name": repo["metadata"]["name"]}
    assert kustomization["spec"]["path"] == "./examples/deploy"


def test_the_schemas_reject_an_undocumented_field() -> None:
    """The derived schemas are strict (a typo such as spec.sourceref fails)."""
    _, kustomization = yaml.safe_load_all((DEPLOY / "flux-kustomization.yaml").read_text())
    kustomization["spec"]["sourceref"] = kustomization["spec"].pop("sourceRef")
    try:
        jsonschema.validate(kustomization, FLUX_KUSTOMIZATION)
    except jsonschema.ValidationError:
        return
    raise AssertionError("an undocumented field passed")


def test_base_is_what_kinrun_manifests_writes_and_the_overlay_lists_it(tmp_path: Path) -> None:
    """Regenerating the base gives the committed files; the overlay lists every base resource."""
    subprocess.run([sys.executable, "-m", "kinrun.cli", "manifests",
                    "examples/configs/secondary-watch.yaml", "-o", str(tmp_path),
                    "--namespace", "kinrun-demo", "--with", "namespace"], cwd=ROOT, check=True,
                   capture_output=True)
    for path in tmp_path.iterdir():
        assert path.read_text() == (DEPLOY / "base" / path.name).read_text(), path.name
    base = yaml.safe_load((DEPLOY / "base" / "kustomization.yaml").read_text())
    overlay = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    assert overlay["resources"] == [f"base/{r}" for r in base["resources"]]
