"""WebFetch's permission target: the domain, as Claude Code asks about it.

In default mode a fetch asks per domain unless an allow rule (`WebFetch(domain:example.com)`,
`WebFetch(domain:*.example.com)`, or a bare `WebFetch`) or Claude Code's preapproved documentation
hosts cover it; "always" stores `WebFetch(domain:<host>)`. A redirect to another host is not followed
(the model is told, and fetches again: a new question for the new domain).
"""

from __future__ import annotations

from urllib.parse import urlsplit

# Claude Code 2.1.332's preapproved hosts (a `/path` entry covers that path and below), from the binary.
PREAPPROVED = (
    "platform.claude.com", "code.claude.com", "claude.dev", "www.claude.dev", "claude.com/docs",
    "modelcontextprotocol.io", "github.com/anthropics", "github.com/anthropic-experimental",
    "raw.githubusercontent.com/anthropics", "raw.githubusercontent.com/anthropic-experimental", "agentskills.io",
    "docs.python.org", "en.cppreference.com", "docs.oracle.com", "learn.microsoft.com", "developer.mozilla.org",
    "go.dev/doc", "go.dev/ref", "www.php.net", "docs.swift.org", "kotlinlang.org", "ruby-doc.org",
    "doc.rust-lang.org", "www.typescriptlang.org", "react.dev", "angular.io", "vuejs.org", "nextjs.org",
    "expressjs.com", "nodejs.org", "bun.sh", "jquery.com", "getbootstrap.com", "tailwindcss.com", "d3js.org",
    "threejs.org", "redux.js.org", "webpack.js.org", "jestjs.io", "reactrouter.com", "docs.djangoproject.com",
    "flask.palletsprojects.com", "fastapi.tiangolo.com", "pandas.pydata.org", "numpy.org", "www.tensorflow.org",
    "pytorch.org", "scikit-learn.org", "matplotlib.org", "requests.readthedocs.io", "jupyter.org", "laravel.com",
    "symfony.com", "wordpress.org/documentation", "docs.spring.io", "hibernate.org", "tomcat.apache.org",
    "gradle.org", "maven.apache.org", "asp.net", "dotnet.microsoft.com", "blazor.net", "reactnative.dev",
    "docs.flutter.dev", "developer.apple.com", "developer.android.com", "keras.io", "spark.apache.org",
    "huggingface.co/docs", "www.kaggle.com/docs", "www.mongodb.com", "redis.io", "www.postgresql.org",
    "dev.mysql.com", "www.sqlite.org", "graphql.org", "prisma.io", "docs.getdbt.com", "docs.aws.amazon.com",
    "cloud.google.com", "kubernetes.io", "www.docker.com", "www.terraform.io", "www.ansible.com",
    "vercel.com/docs", "docs.stripe.com", "docs.netlify.com", "devcenter.heroku.com", "dev.wix.com/docs",
    "cypress.io", "selenium.dev", "docs.unity.com", "docs.unrealengine.com", "git-scm.com", "nginx.org",
    "httpd.apache.org",
)


def url_host(url: str) -> str | None:
    try:
        parts = urlsplit(url.strip())
        return (parts.hostname or "").rstrip(".").lower() or None
    except ValueError:
        return None


def domain_target(url: object) -> str | None:
    """`domain:<host>` for a fetchable URL, the content an allow rule is matched against."""
    host = url_host(url) if isinstance(url, str) else None
    return f"domain:{host}" if host else None


def is_preapproved(url: str) -> bool:
    """A https/http URL on one of Claude Code's preapproved documentation hosts (path-scoped entries by
    whole path segments: `github.com/anthropics` covers `/anthropics/x`, not `/anthropics-evil`)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return False
    if parts.scheme.lower() not in ("http", "https") or parts.username or parts.password:
        return False
    host = (parts.hostname or "").rstrip(".").lower()
    path = parts.path or "/"
    for entry in PREAPPROVED:
        ehost, _, epath = entry.partition("/")
        if host != ehost:
            continue
        if not epath or path == f"/{epath}" or path.startswith(f"/{epath}/"):
            return True
    return False


def same_site(a: str, b: str) -> bool:
    """A redirect WebFetch follows by itself: same scheme, port and host (a `www.` added or dropped), no
    credentials in the target. Anything else goes back to the model (Claude Code's rule)."""
    try:
        pa, pb = urlsplit(a), urlsplit(b)
        if pa.scheme != pb.scheme or pa.port != pb.port or pb.username or pb.password:
            return False
    except ValueError:
        return False

    def bare(h: str | None) -> str:
        h = (h or "").lower().rstrip(".")
        return h[4:] if h.startswith("www.") else h

    return bool(pa.hostname) and bare(pa.hostname) == bare(pb.hostname)
