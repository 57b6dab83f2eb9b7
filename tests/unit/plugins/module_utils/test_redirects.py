# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The redirect rules of model_fetch (_redirects.py): where the hub token may go. Cases are
written by hand from RFC 9110/3986 and the hub's real answers (a 302 from huggingface.co to its
CDN host for LFS files)."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _redirects as rd

HUB = "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/%s/model.safetensors" % ("a" * 40)


@pytest.mark.parametrize("first, second, same", [
    ("https://huggingface.co/a", "https://huggingface.co/b?x=1", True),
    ("https://huggingface.co/a", "https://HuggingFace.CO:443/b", True),    # case, default port
    ("http://hub.local/a", "http://hub.local:80/b", True),
    ("https://huggingface.co/a", "https://cdn-lfs.huggingface.co/b", False),  # a subdomain is another host
    ("https://huggingface.co/a", "https://huggingface.co:8443/b", False),
    ("https://hub.local/a", "http://hub.local/a", False),                  # scheme
    ("https://127.0.0.1:8765/a", "https://127.0.0.2:8765/a", False),
    ("https://[::1]:8765/a", "https://[::1]:8765/b", True),
])
def test_same_origin_is_scheme_host_and_port(first, second, same):
    assert rd.same_origin(first, second) is same


@pytest.mark.parametrize("url, why", [
    ("ftp://hub.local/a", "ftp://hub.local/a is not an http:// or https:// URL"),
    ("https:///a", "https:///a names no host"),
    ("https://hub.local:99999/a", "https://hub.local:99999/a has an invalid port"),
])
def test_origin_refuses_what_is_not_an_http_url(url, why):
    with pytest.raises(rd.RedirectError) as err:
        rd.origin(url)
    assert str(err.value) == why


def test_redact_drops_user_info_query_and_fragment():
    assert rd.redact("https://u:p@cdn.example/obj/1?X-Amz-Signature=abc#f") == "https://cdn.example/obj/1"


@pytest.mark.parametrize("location, expected", [
    ("/_cdn/Qwen/x/model.safetensors", "https://huggingface.co/_cdn/Qwen/x/model.safetensors"),
    ("other.bin", "https://huggingface.co/Qwen/Qwen2.5-0.5B-Instruct/resolve/%s/other.bin" % ("a" * 40)),
    ("//cdn-lfs.hf.co/repos/ab?X-Amz-Expires=3600", "https://cdn-lfs.hf.co/repos/ab?X-Amz-Expires=3600"),
    ("https://cdn-lfs.hf.co/a b#frag", "https://cdn-lfs.hf.co/a%20b"),
    ("  https://cdn-lfs.hf.co/%41\t", "https://cdn-lfs.hf.co/%41"),          # escapes kept, blanks trimmed
    (u"https://cdn.example/m\u00e9", "https://cdn.example/m%C3%A9"),
    ("https://cdn.example", "https://cdn.example/"),
])
def test_resolve_makes_relative_locations_absolute(location, expected):
    assert rd.resolve(HUB, location) == expected


@pytest.mark.parametrize("location", ["", "   ", None])
def test_resolve_refuses_a_redirect_without_location(location):
    with pytest.raises(rd.RedirectError, match="answered a redirect without a Location header"):
        rd.resolve(HUB, location)


def test_token_goes_to_the_same_origin_and_never_to_the_cdn():
    assert rd.next_hop(HUB, HUB, "/api/other", True, 0, 5) == ("https://huggingface.co/api/other", True)
    assert rd.next_hop(HUB, HUB, "https://cdn-lfs.hf.co/repos/x?sig=1", True, 0, 5) == (
        "https://cdn-lfs.hf.co/repos/x?sig=1", False)
    # the hop from the CDN back to the hub: the token was dropped and is not sent again
    assert rd.next_hop(HUB, "https://cdn-lfs.hf.co/repos/x", HUB, False, 1, 5) == (HUB, False)
    # no token to start with: none appears
    assert rd.next_hop(HUB, HUB, "/x", False, 0, 5) == ("https://huggingface.co/x", False)
    # another port of the same host is another origin
    assert rd.next_hop(HUB, HUB, "https://huggingface.co:444/x", True, 0, 5)[1] is False


@pytest.mark.parametrize("current, location, followed, limit, why", [
    (HUB, "http://cdn-lfs.hf.co/x", 0, 5, "redirected from https to http (http://cdn-lfs.hf.co/x): downgrade refused"),
    (HUB, "http://huggingface.co/x", 0, 5, "downgrade refused"),
    (HUB, "ftp://mirror.example/x", 0, 5, "redirected to a ftp: URL, only http(s) is followed"),
    (HUB, "file:///etc/shadow", 0, 5, "redirected to a file: URL"),
    (HUB, "https://user:pw@cdn.example/x", 0, 5, "carrying user credentials (https://cdn.example/x): refused"),
    (HUB, "https://cdn.example:0x1/x", 0, 5, "has an invalid port"),
    (HUB, "/again", 5, 5, "redirected again after 5 redirect(s), the most allowed"),
    (HUB, "/again", 0, 0, "redirected again after 0 redirect(s)"),
])
def test_refused_hops(current, location, followed, limit, why):
    with pytest.raises(rd.RedirectError) as err:
        rd.next_hop(HUB, current, location, True, followed, limit)
    assert why in str(err.value)


def test_http_to_https_upgrade_is_followed_without_a_token():
    assert rd.next_hop("http://mirror.local/a", "http://mirror.local/a", "https://mirror.local/a", False, 0, 5) == (
        "https://mirror.local/a", False)


@pytest.mark.parametrize("token, why", [
    ("hf_abc\n", "contains a line break (CR or LF)"),
    ("hf_abc\rX-Evil: 1", "contains a line break (CR or LF)"),
    ("hf_abc def", "contains whitespace"),
    ("hf_abc\t", "contains whitespace"),
    (u"hf_abc\u00a0", "contains whitespace"),
    ("hf_abc\x00", "contains a non-printable or non-ASCII character"),
    ("hf_abc\x7f", "contains a non-printable or non-ASCII character"),
    (u"hf_ab\u00e9", "contains a non-printable or non-ASCII character"),
])
def test_token_problem_refuses_what_would_break_or_inject_a_header(token, why):
    assert rd.token_problem(token) == why


@pytest.mark.parametrize("token", [None, "", "hf_AbCdEf0123456789", "a-b.c_d~e+f/g="])
def test_token_problem_accepts_real_tokens(token):
    assert rd.token_problem(token) is None


@pytest.mark.parametrize("url, token, why", [
    ("http://127.0.0.1:8765/api", "hf_x", "http://127.0.0.1:8765/api is plain http: the token would cross"),
    ("https://u:p@hub.local/api", None, "https://hub.local/api carries user credentials in the URL"),
    ("hub.local/api", None, "hub.local/api is not an http:// or https:// URL"),
    (HUB, "hf_x\n", "the token contains a line break (CR or LF)"),
])
def test_start_problem(url, token, why):
    assert why in rd.start_problem(url, token)


@pytest.mark.parametrize("url, token", [(HUB, "hf_x"), ("http://mirror.local/a", None), ("http://mirror.local/a", "")])
def test_start_allowed(url, token):
    assert rd.start_problem(url, token) is None
