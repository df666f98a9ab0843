# SPDX-License-Identifier: MIT
"""A server whose loop body is one call, keeping every response it made on
the device: no leakwatch call, no optimizer. Its steps come from its loop,
seen by the loop variable bound anew at the same line.

    serve.py [--requests N]
"""
import argparse
import os
import sys

sys.path.insert(0, os.environ["TINYTENSOR_SITE"])
import tinytensor as tt  # noqa: E402


class Server(object):
    def __init__(self):
        self.responses = []

    def handle(self, size):
        self.responses.append(tt.empty((size,)))  # @response


def serve(server, sizes):
    for size in sizes:
        server.handle(size)  # @loop
    return len(sizes)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=30)
    args = parser.parse_args()
    server = Server()
    sizes = [4096 + i % 2 for i in range(args.requests)]
    print("requests: %d" % serve(server, sizes))


if __name__ == "__main__":
    main()
