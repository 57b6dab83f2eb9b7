# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``vllm`` console script of the stand-in (vllm.scripts:main, as in vLLM 0.6.x). TEST ONLY.

Only the ``serve`` subcommand is implemented (``complete`` and ``chat`` of the real CLI are
clients of a running server and are not needed by the deployment).
"""

import sys

from vllm.entrypoints.openai.cli_args import (FlexibleArgumentParser, make_arg_parser,
                                              validate_parsed_serve_args)
from vllm.version import __version__

_DEFAULT_MODEL = "facebook/opt-125m"  # EngineArgs.model in vLLM 0.6.3


def serve(args):
    # vLLM 0.6.3 (vllm/scripts.py): the model comes as the positional model_tag
    if args.model != _DEFAULT_MODEL:
        raise ValueError("With `vllm serve`, you should provide the model as a positional argument "
                         "instead of via the `--model` option.")
    args.model = args.model_tag
    from vllm.entrypoints.openai.api_server import run_server
    return run_server(args)


def make_parser():
    parser = FlexibleArgumentParser(prog="vllm", description="vLLM CLI")
    parser.add_argument("-v", "--version", action="version", version=__version__)
    subparsers = parser.add_subparsers(required=True, dest="subparser")
    serve_parser = subparsers.add_parser("serve", help="Start the vLLM OpenAI Compatible API server",
                                         usage="vllm serve <model_tag> [options]")
    serve_parser.add_argument("model_tag", type=str, help="The model tag to serve")
    serve_parser.add_argument("--config", type=str, default="",
                              help="Read CLI options from a config file (not supported by the "
                                   "gpu-fleet stand-in).")
    make_arg_parser(serve_parser)
    serve_parser.set_defaults(dispatch_function=serve)
    return parser


def main(argv=None):
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.subparser == "serve":
        validate_parsed_serve_args(args)
        if args.config:
            parser.error("--config is not supported by the gpu-fleet vLLM stand-in")
    return args.dispatch_function(args)


if __name__ == "__main__":
    sys.exit(main())
