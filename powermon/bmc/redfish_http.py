"""The Redfish client's HTTP side (docs: ../shared/reference/bmc_power.md): standard library only. Credentials go
by HTTP Basic on every request (no session to leak on a BMC with few session slots) and only to the BMC's own origin
(links and redirects elsewhere are refused); the service root needs none."""

from __future__ import annotations

import base64
import http.client
import json
import logging
import ssl
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from archline.powermon.bmc.reading import BmcUnavailable
from archline.powermon.errors import DeviceError, MeterError
from archline.powermon.stream.rate_note import WARNING

log = logging.getLogger("archline.powermon")


class ResourceMissing(DeviceError):
    """HTTP 404: a link that leads nowhere (discovery tries the next power source)."""



def mask_url(url: str) -> str:
    """``url`` fit to print: credentials in it (``http://user:pw@host``) become ``user:***@``; never echo a password."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host_part, slash, tail = rest.partition("/")
    if "@" not in host_part:
        return url
    userinfo, _, host = host_part.rpartition("@")
    user = userinfo.split(":", 1)[0]
    return f"{scheme}{sep}{user}:***@{host}{slash}{tail}"


def split_credentials(url: str) -> tuple[str, str | None, str | None]:
    """``http://user:pw@host:port/x`` -> (``http://host:port/x``, user, pw): credentials never stay in an address
    that messages print. A URL that cannot be parsed is a MeterError naming it (masked)."""
    try:
        u = urlsplit(url)
        u.port                                     # noqa: B018  (raises ValueError on a bad port)
    except ValueError as e:
        raise MeterError(f"{mask_url(url)!r} is not a valid address ({e})") from None
    if u.username is None and u.password is None:
        return url, None, None
    netloc = u.netloc.rpartition("@")[2]
    return (urlunsplit((u.scheme, netloc, u.path, u.query, u.fragment)), unquote(u.username or ""),
            None if u.password is None else unquote(u.password))


def origin(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of ``url``: where credentials may go."""
    u = urlsplit(url)
    port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    return u.scheme, (u.hostname or "").lower(), port


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only within the BMC's own origin: urllib would send the Authorization header (the BMC
    password) to whatever host a redirect names."""

    def __init__(self, base: str) -> None:
        self.base = base

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        target = urljoin(req.full_url, newurl)
        if origin(target) != origin(self.base):
            raise DeviceError(f"redfish {mask_url(req.full_url)}: HTTP {code} redirects to another origin "
                              f"({mask_url(target)}); refused, so the credentials go nowhere else: give that "
                              "address as the meter's url if it is the BMC")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class RedfishHttp:
    """One Redfish service's connection: ``url`` is its root host (``http://127.0.0.1:8000``)."""

    def __init__(self, url: str, username: str | None = None, password: str | None = None,
                 timeout_s: float = 5.0, verify: bool | str = True) -> None:
        shown = mask_url(url)
        if not url.startswith(("http://", "https://")):
            raise MeterError(f"redfish: {shown!r} is not an http:// or https:// address")
        if any(c.isspace() or ord(c) < 32 for c in url):
            raise MeterError(f"redfish: {shown!r} is not a valid address (it holds a space or control character)")
        clean, url_user, url_password = split_credentials(url)
        if urlsplit(clean).query or urlsplit(clean).fragment:     # it would be glued onto every resource's path
            raise MeterError(f"redfish: {shown!r}: a Redfish address takes no query or fragment (?, #); give "
                             "http[s]://[USER:PASSWORD@]HOST[:PORT], and the rest in a profile's [[meters]] entry")
        if username is None and url_user:           # credentials in the URL: used, never shown again
            username, password = url_user, password if password is not None else url_password
        self.url = clean.rstrip("/")
        if self.url.endswith("/redfish/v1"):
            self.url = self.url[: -len("/redfish/v1")]
        if not urlsplit(self.url).hostname:
            raise MeterError(f"redfish: {shown!r} names no host (http://HOST[:PORT])")
        self.timeout_s = timeout_s
        self._auth = (None if username is None else
                      "Basic " + base64.b64encode(f"{username}:{password or ''}".encode()).decode())
        self._ctx: ssl.SSLContext | None = None
        if self.url.startswith("https://"):
            # BMCs ship self-signed certificates: a CA file, or an explicit opt-out
            self._ctx = ssl.create_default_context(cafile=verify if isinstance(verify, str) else None)
            if verify is False:
                self._ctx.check_hostname = False
                self._ctx.verify_mode = ssl.CERT_NONE
                log.warning("%sredfish %s: verify = false: the BMC's certificate is not checked (anyone between "
                            "here and it could read the password); export SSL_CERT_FILE instead", WARNING, self.url)
        self._opener = urllib.request.build_opener(_SameOriginRedirects(self.url),
                                                   urllib.request.HTTPSHandler(context=self._ctx))
        self.notes: list[str] = []          #: what discovery warned about (said once; kept in the summary)

    def _note(self, text: str) -> None:
        """Kept once: a recording's window warnings carry it (meter record prints them, the summary keeps them)."""
        if text not in self.notes:
            self.notes.append(text)

    def get(self, path: str) -> dict[str, Any]:
        # a link may be absolute (DataSourceUri "http://bmc/redfish/v1/..."): joined, never glued onto the base
        full = urljoin(self.url + "/", path)
        if origin(full) != origin(self.url):
            raise DeviceError(f"redfish {self.url}: a link names another origin ({mask_url(full)}); not followed "
                              "(the credentials go to the BMC only)")
        path = urlsplit(full).path + (f"?{urlsplit(full).query}" if urlsplit(full).query else "")
        req = urllib.request.Request(full, headers={"Accept": "application/json"})
        if self._auth is not None and path.rstrip("/") not in ("/redfish/v1", "/redfish"):
            req.add_header("Authorization", self._auth)
        try:
            with self._opener.open(req, timeout=self.timeout_s) as r:
                body = r.read()
        except urllib.error.HTTPError as e:
            if e.code >= 500:
                raise BmcUnavailable(f"redfish {self.url}{path}: HTTP {e.code}") from None
            if e.code in (401, 403):
                raise DeviceError(f"redfish {self.url}{path}: HTTP {e.code} (check the username and password: a "
                                  "profile's [[meters]] username and the environment variable its password_env "
                                  "names, or http://USER:PASSWORD@HOST in the address)") from None
            if e.code == 404:
                raise ResourceMissing(f"redfish {self.url}{path}: HTTP 404") from None
            raise DeviceError(f"redfish {self.url}{path}: HTTP {e.code}") from None
        except (http.client.InvalidURL, ValueError) as e:     # an address http.client cannot use
            raise MeterError(f"redfish {self.url}{path}: not a valid address ({e})") from None
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            if isinstance(reason, ssl.SSLCertVerificationError):     # no poll will fare better: say how to fix it
                raise DeviceError(f"redfish {self.url}: the BMC's certificate failed verification "
                                  f"({reason.verify_message}); export SSL_CERT_FILE=PATH naming a PEM file of the "
                                  "BMC's certificate (or of the CA that signed it) and run again") from None
            raise BmcUnavailable(f"redfish {self.url}{path}: no answer ({reason})") from None
        try:
            out = json.loads(body)
        except ValueError:
            raise DeviceError(f"redfish {self.url}{path}: the reply is not JSON ({body[:40]!r}...): the BMC "
                              "misbehaves, or the address is not its Redfish service (check the URL)") from None
        if not isinstance(out, dict):
            raise DeviceError(f"redfish {self.url}{path}: the reply is not a JSON object: the BMC misbehaves")
        return out

    @staticmethod
    def _link(obj: dict[str, Any], key: str) -> str | None:
        v = obj.get(key)
        return v.get("@odata.id") if isinstance(v, dict) and isinstance(v.get("@odata.id"), str) else None
