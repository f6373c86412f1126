#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""s3snap - crash images of an S3 bucket, for the crash simulator with
remote=s3:// (sim.py remote --s3snap).  Test-only code.

An S3 service has no snapshots, and Ceph's gateway cannot be rolled back
a pool at a time: its buckets live in several pools (data, index) whose
snapshots would not be taken at one instant.  So an image is made the
way a lost machine makes one: the daemon is stopped (SIGSTOP: every
thread at one instant, its connections left open), and what the service
holds under the prefix is then its image.  Requests the daemon had sent
whole may still complete meanwhile, in any order, as they would after
the machine was lost; one it had not finished sending never does.  The
daemon acknowledged nothing after the stop.

  s3snap.py snaps BUCKET PREFIX PID MS STOP DIR
      every MS milliseconds (jittered) until the file STOP exists, then
      once more: stop PID, list PREFIX, copy every object not copied
      before (by name and ETag) into BUCKET/snapstore/, write the image's
      list to DIR/NAME, resume PID; print "NAME T0 T1", T0 and T1 read
      from CLOCK_MONOTONIC (the workload's clock) just before the stop and
      once the process is stopped.
  s3snap.py copy BUCKET DIR NAME DEST
      make image NAME under BUCKET/DEST/ (which must be empty), the hold
      object left out (the lost machine's hold has lapsed); print
      "objects N bytes B".
  s3snap.py wipe BUCKET PREFIX
      remove every object under BUCKET/PREFIX.

Settings from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
AWS_REGION (path-style requests, SigV4 with an unsigned payload).  Exit
status 0, or 1 with the reason on stderr.
"""
import concurrent.futures
import datetime
import hashlib
import hmac
import http.client
import os
import random
import signal
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
HOLD = "objfs.hold"
STORE = "snapstore/"


class S3:
    def __init__(self):
        url = urllib.parse.urlsplit(os.environ["AWS_ENDPOINT_URL"])
        self.host = url.netloc
        self.https = url.scheme == "https"
        self.key = os.environ["AWS_ACCESS_KEY_ID"]
        self.secret = os.environ["AWS_SECRET_ACCESS_KEY"]
        self.region = os.environ.get("AWS_REGION", "us-east-1")
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, "c", None)
        if c is None:
            cls = (http.client.HTTPSConnection if self.https
                   else http.client.HTTPConnection)
            c = self.local.c = cls(self.host, timeout=60)
        return c

    def sign(self, method, path, query, headers):
        now = datetime.datetime.now(datetime.timezone.utc)
        amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        headers.update({"host": self.host, "x-amz-date": amz,
                        "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        names = sorted(h.lower() for h in headers)
        lower = {h.lower(): str(v).strip() for h, v in headers.items()}
        canon_q = "&".join(
            "%s=%s" % (urllib.parse.quote(k, safe="-_.~"),
                       urllib.parse.quote(v, safe="-_.~"))
            for k, v in sorted(query.items()))
        creq = "\n".join([method, path, canon_q] +
                         ["%s:%s" % (h, lower[h]) for h in names] +
                         ["", ";".join(names), "UNSIGNED-PAYLOAD"])
        scope = "%s/%s/s3/aws4_request" % (day, self.region)
        sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope,
                         hashlib.sha256(creq.encode()).hexdigest()])
        k = ("AWS4" + self.secret).encode()
        for part in (day, self.region, "s3", "aws4_request"):
            k = hmac.new(k, part.encode(), hashlib.sha256).digest()
        sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
        headers["Authorization"] = (
            "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
            "Signature=%s" % (self.key, scope, ";".join(names), sig))
        return canon_q

    def req(self, method, bucket, key="", query=None, headers=None,
            ok=(200, 204)):
        query = dict(query or {})
        headers = dict(headers or {})
        path = "/" + urllib.parse.quote(bucket + ("/" + key if key else ""),
                                        safe="/-_.~")
        q = self.sign(method, path, query, headers)
        for attempt in range(5):
            c = self.conn()
            try:
                c.request(method, path + ("?" + q if q else ""),
                          headers=headers)
                r = c.getresponse()
                body = r.read()
            except (OSError, http.client.HTTPException):
                c.close()
                self.local.c = None
                time.sleep(0.2 * (attempt + 1))
                continue
            if r.status in ok:
                return body
            if r.status >= 500:
                time.sleep(0.2 * (attempt + 1))
                continue
            raise RuntimeError("%s %s: HTTP %d %s" % (method, path, r.status,
                                                      body[:200]))
        raise RuntimeError("%s %s: no answer after 5 tries" % (method, path))

    def list(self, bucket, prefix):
        """[(key, etag, size)] of every object under prefix."""
        out, token = [], None
        while True:
            q = {"list-type": "2", "prefix": prefix}
            if token:
                q["continuation-token"] = token
            root = ET.fromstring(self.req("GET", bucket, query=q))
            for c in root.findall(NS + "Contents"):
                out.append((c.find(NS + "Key").text,
                            c.find(NS + "ETag").text.strip('"'),
                            int(c.find(NS + "Size").text)))
            if root.findtext(NS + "IsTruncated") != "true":
                return out
            token = root.findtext(NS + "NextContinuationToken")

    def copy(self, bucket, src, dst):
        self.req("PUT", bucket, dst, headers={
            "x-amz-copy-source": urllib.parse.quote("/%s/%s" % (bucket, src),
                                                    safe="/-_.~")})

    def delete(self, bucket, key):
        self.req("DELETE", bucket, key, ok=(200, 204, 404))


def stored(key, etag):
    return STORE + key + "@" + etag


def stopped(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            # stopped, or dead (a zombie not yet reaped)
            return f.read().rsplit(")", 1)[1].split()[0] in "tTZX"
    except OSError:
        return True             # gone: stopped for good


def snaps(s3, bucket, prefix, pid, ms, stop, d):
    done = set()
    pool = concurrent.futures.ThreadPoolExecutor(8)
    n = 0
    rng = random.Random(pid)
    last = False
    while True:
        last = os.path.exists(stop)
        n += 1
        t0 = time.monotonic_ns()
        alive = True
        try:
            os.kill(pid, signal.SIGSTOP)
            while not stopped(pid):
                time.sleep(0.0005)
        except ProcessLookupError:
            alive = False
        t1 = time.monotonic_ns()
        try:
            objs = s3.list(bucket, prefix)
            new = [(k, e) for k, e, _ in objs if (k, e) not in done]
            # An object removed meanwhile (a collection's DELETE that
            # was on its way) is not in the image: as it would not be.
            for (k, e), r in zip(new, pool.map(
                    lambda x: try_copy(s3, bucket, *x), new)):
                if r:
                    done.add((k, e))
            name = "s%d" % n
            with open(os.path.join(d, name), "w") as f:
                f.write("prefix %s\n" % prefix)
                for k, e, size in objs:
                    if (k, e) in done:
                        f.write("%s %s %d\n" % (k, e, size))
        finally:
            if alive:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass        # killed meanwhile (the test's last kill)
        print(name, t0, t1, flush=True)
        if last:
            return
        time.sleep(ms * rng.uniform(0.5, 1.5) / 1000)


def try_copy(s3, bucket, key, etag):
    try:
        s3.copy(bucket, key, stored(key, etag))
        return True
    except RuntimeError as e:
        if "HTTP 404" in str(e):
            return False
        raise


def copy(s3, bucket, d, name, dest):
    with open(os.path.join(d, name)) as f:
        prefix = f.readline().split(" ", 1)[1].rstrip("\n")
        lines = [l.split() for l in f if l.strip()]
    todo = [(k, e, int(sz)) for k, e, sz in lines
            if k[len(prefix):] != HOLD]
    if s3.list(bucket, dest):
        raise RuntimeError("%s/%s is not empty" % (bucket, dest))
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda x: s3.copy(bucket, stored(x[0], x[1]),
                                        dest + x[0][len(prefix):]), todo))
    print("objects %d bytes %d" % (len(todo), sum(x[2] for x in todo)))


def wipe(s3, bucket, prefix):
    keys = [k for k, _, _ in s3.list(bucket, prefix)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda k: s3.delete(bucket, k), keys))


def main(a):
    s3 = S3()
    if a[:1] == ["snaps"] and len(a) == 7:
        snaps(s3, a[1], a[2], int(a[3]), int(a[4]), a[5], a[6])
    elif a[:1] == ["copy"] and len(a) == 5:
        copy(s3, a[1], a[2], a[3], a[4])
    elif a[:1] == ["wipe"] and len(a) == 3:
        wipe(s3, a[1], a[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except (RuntimeError, OSError, KeyError, ET.ParseError) as e:
        sys.exit("s3snap: %s" % e)
