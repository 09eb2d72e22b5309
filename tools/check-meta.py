#!/usr/bin/env python3
"""Validate META.json against the PGXN Meta Spec 1.0.0 (the rules that a
PGXN upload enforces), and check that it agrees with the control file, the
Makefile, LICENSE and the files of the distribution beside it (the tree, or
an unpacked make dist).  Prints TAP."""
import json
import os
import re
import sys

SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+)?$")
LICENSES = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
            "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
            "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
            "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
            "restricted", "unrestricted", "unknown"}
STATUS = {"stable", "testing", "unstable"}
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^\s/]+(/\S*)?$")
# The project's own addresses: every resource names the one repository.
PROJECT_WEB = "https://github.com/pg-chronicle/pg_chronicle"
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}

results = []


def check(ok, name):
    results.append((bool(ok), name))


path = sys.argv[1] if len(sys.argv) > 1 else "META.json"
control = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(path), "pg_chronicle.control")
try:
    meta = json.load(open(path))
    check(True, "META.json is valid JSON")
except Exception as e:  # noqa: BLE001
    check(False, f"META.json is valid JSON ({e})")
    meta = {}

for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    check(key in meta, f"required key {key}")
check(isinstance(meta.get("name"), str) and re.match(r"^[A-Za-z0-9_-]{2,}$", meta.get("name", "")),
      "name is a valid distribution name")
check(SEMVER.match(str(meta.get("version", ""))), "version is a semantic version")
check(meta.get("meta-spec", {}).get("version") == "1.0.0", "meta-spec version is 1.0.0")
m = meta.get("maintainer")
check(isinstance(m, str) or (isinstance(m, list) and m and all(isinstance(x, str) for x in m)),
      "maintainer is a string or a list of strings")
lic = meta.get("license")
check((isinstance(lic, str) and lic in LICENSES) or isinstance(lic, dict) or
      (isinstance(lic, list) and all(x in LICENSES for x in lic)), "license is a known license")
prov = meta.get("provides", {})
check(isinstance(prov, dict) and prov, "provides names at least one extension")
for ext, p in prov.items():
    check(SEMVER.match(str(p.get("version", ""))), f"provides.{ext}.version is a semantic version")
    check("file" in p, f"provides.{ext}.file is given")
check(meta.get("release_status", "stable") in STATUS, "release_status is known")
for phase, rels in meta.get("prereqs", {}).items():
    check(phase in PHASES, f"prereqs phase {phase} is known")
    for rel, mods in rels.items():
        check(rel in RELATIONS, f"prereqs.{phase}.{rel} is a known relation")
        check(all(isinstance(v, str) and re.match(r"^\d+(\.\d+){0,2}$", v) or v == "0"
                  for v in mods.values()), f"prereqs.{phase}.{rel} versions are versions")
base = os.path.dirname(os.path.abspath(path))


def read(name):
    try:
        with open(os.path.join(base, name)) as f:
            return f.read()
    except OSError:
        return None


def make_var(text, name):
    m = re.search(rf"^{name}\s*[:?]?=\s*(.*?)\s*$", text or "", re.M)
    return m.group(1) if m else None


makefile = read("Makefile")
for ext, p in prov.items():
    f = p.get("file")
    # The install script is built (DATA_built, from src/sql); a dist has the
    # rule that builds it, not the file.
    built = (f == f"{ext}--{p.get('version')}.sql"
             and make_var(makefile, "EXTENSION") == ext
             and make_var(makefile, "EXTVERSION") == p.get("version")
             and "$(EXTENSION)--$(EXTVERSION).sql" in (make_var(makefile, "DATA_built") or "").split())
    check(isinstance(f, str) and (os.path.isfile(os.path.join(base, f)) or built),
          f"provides.{ext}.file ({f}) is in the distribution or is the install script the Makefile builds")
    if "docfile" in p:
        check(os.path.isfile(os.path.join(base, p["docfile"])), f"provides.{ext}.docfile ({p['docfile']}) exists")

res = meta.get("resources")
check(isinstance(res, dict), "resources is given")
res = res if isinstance(res, dict) else {}
check(all(k in ("homepage", "bugtracker", "repository") or k.lower().startswith("x_") for k in res),
      "resources has only homepage, bugtracker, repository (or x_ keys)")
repo = res.get("repository", {}) if isinstance(res.get("repository"), dict) else {}
bug = res.get("bugtracker", {}) if isinstance(res.get("bugtracker"), dict) else {}
check(all(isinstance(u, str) and URI.match(u)
          for u in [res.get("homepage"), repo.get("url"), repo.get("web"), bug.get("web")]),
      "resources.homepage, repository.url, repository.web and bugtracker.web are URIs")
check(repo.get("type") == "git", "resources.repository.type is git")
check(repo.get("web") == PROJECT_WEB and res.get("homepage") == PROJECT_WEB,
      f"resources.repository.web and homepage are the project's repository ({PROJECT_WEB})")
check(repo.get("url") == PROJECT_WEB + ".git", "resources.repository.url is the repository's clone URL")
check(bug.get("web") == PROJECT_WEB + "/issues", "resources.bugtracker.web is the repository's issues")

license_text = read("LICENSE")
check(lic != "postgresql" or (license_text is not None and re.search(
    r"Permission to use, copy, modify, and distribute this software and its\s+documentation "
    r"for any purpose, without fee, and without a written agreement is\s+hereby granted",
    license_text)), "LICENSE is the PostgreSQL Licence that META.json names")
check(meta.get("version") == make_var(makefile, "EXTVERSION"),
      "META.json version equals the Makefile's EXTVERSION")

try:
    default_version = re.search(r"default_version\s*=\s*'([^']+)'", open(control).read()).group(1)
except Exception:  # noqa: BLE001
    default_version = None
check(meta.get("version") == default_version, "META.json version equals the control file's default_version")
check(prov.get("pg_chronicle", {}).get("version") == default_version,
      "provides.pg_chronicle.version equals default_version")

print(f"1..{len(results)}")
for i, (ok, name) in enumerate(results, 1):
    print(f"{'ok' if ok else 'not ok'} {i} - {name}")
sys.exit(0 if all(ok for ok, _ in results) else 1)
