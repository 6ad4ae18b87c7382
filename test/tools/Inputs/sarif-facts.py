#!/usr/bin/env python3
"""Prints what a SARIF report says, one fact per line, for FileCheck:
the rules and how they are described, the URI bases, and each result with its
location, region, fingerprint and related locations. Usage: sarif-facts.py R.sarif
"""
import json
import os
import sys

with open(sys.argv[1], encoding="utf-8") as handle:
    run = json.load(handle)["runs"][0]
driver = run["tool"]["driver"]
print("bases:", json.dumps(run.get("originalUriBaseIds"), sort_keys=True))
saved = run["properties"]["metaguard"]
print("files:", " ".join(os.path.relpath(f, saved["sourceRoot"]) for f in saved["files"]))
for rule in driver["rules"]:
    print(f"rule {rule['id']} name={rule.get('name')} level={rule['defaultConfiguration']['level']}"
          f" tags={','.join(rule['properties']['tags'])} helpUri={rule.get('helpUri', '-')}")
    print(f"  short: {rule['shortDescription']['text']}")
    print(f"  full: {rule['fullDescription']['text'][:80]}")
    print(f"  help.text: {len(rule['help']['text'])} chars, starts {rule['help']['text'][:30]!r}")
    print(f"  help.markdown: starts {rule['help']['markdown'][:30]!r}")


def where(location):
    physical = location["physicalLocation"]
    artifact, region = physical["artifactLocation"], physical["region"]
    return (f"{artifact.get('uriBaseId', '-')} {artifact['uri']} "
            f"{region['startLine']}:{region['startColumn']}-"
            f"{region['endLine']}:{region['endColumn']}")


for result in run["results"]:
    index = result["ruleIndex"]
    print(f"result {result['ruleId']} rule#{index}={driver['rules'][index]['id']} "
          f"level={result['level']} at {where(result['locations'][0])}")
    print(f"  message: {result['message']['text']}")
    print(f"  fingerprints: {json.dumps(result['partialFingerprints'], sort_keys=True)}")
    for related in result.get("relatedLocations", []):
        print(f"  related {related['id']} at {where(related)}: {related['message']['text']}")
print(f"results: {len(run['results'])}")
