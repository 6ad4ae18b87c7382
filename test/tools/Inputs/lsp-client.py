#!/usr/bin/env python3
"""Drives metaguard-lsp like an editor: initialize, open a file, save it,
close it, shut down. Prints every message the server sends, one JSON per line
(keys sorted), then the server's exit status.

usage: lsp-client.py ROOT FILE -- SERVER-COMMAND...
"""
import json
import os
import subprocess
import sys

root, source = sys.argv[1], sys.argv[2]
server = sys.argv[sys.argv.index("--") + 1:]
uri = "file://" + os.path.abspath(source)


def frame(message):
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


messages = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize",
     "params": {"rootUri": "file://" + os.path.abspath(root), "capabilities": {},
                "initializationOptions": json.loads(os.environ.get("LSP_OPTIONS", "{}"))}},
    {"jsonrpc": "2.0", "method": "initialized", "params": {}},
    {"jsonrpc": "2.0", "method": "textDocument/didOpen",
     "params": {"textDocument": {"uri": uri, "languageId": "cpp", "version": 1,
                                 "text": open(source).read()}}},
    {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {}},
    {"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {"textDocument": {"uri": uri}}},
    {"jsonrpc": "2.0", "id": 3, "method": "shutdown"},
    {"jsonrpc": "2.0", "method": "exit"},
]
proc = subprocess.run(server, input=b"".join(frame(m) for m in messages),
                      capture_output=True, check=False)
data = proc.stdout
while data:
    header, _, rest = data.partition(b"\r\n\r\n")
    length = int(header.split(b":")[1])
    print(json.dumps(json.loads(rest[:length]), sort_keys=True))
    data = rest[length:]
sys.stderr.write(proc.stderr.decode())
print("exit", proc.returncode)
