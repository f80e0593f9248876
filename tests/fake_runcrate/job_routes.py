"""HTTP handlers for /api/v1/jobs, /api/v1/job-groups, code uploads and signed artifact URLs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from .artifacts import SignedUrls
from .idempotency import IdempotencyKeys
from .job_state import LIVE_STATUSES, JobGroup
from .jobs import JobBoard
from .routing import Request, Router
from .settings import Settings
from .uploads import UploadStore
from .wire import ApiError, Response, invalid, no_content, not_found, ok

JOB_STATUSES = LIVE_STATUSES | {"succeeded", "failed", "cancelled", "timed_out"}
_JOB = r"/api/v1/jobs/(?P<job_id>[^/]+)"


class JobRoutes:
    def __init__(
        self,
        board: JobBoard,
        keys: IdempotencyKeys,
        uploads: UploadStore,
        signed_urls: SignedUrls,
        settings: Settings,
    ) -> None:
        self._board = board
        self._keys = keys
        self._uploads = uploads
        self._signed = signed_urls
        self._settings = settings

    def register(self, router: Router) -> None:
        router.add("POST", r"/api/v1/jobs/uploads", self.create_upload)
        router.add("POST", r"/api/v1/jobs", self.submit, sleeps_itself=True)
        router.add("GET", r"/api/v1/jobs", self.list)
        router.add("GET", _JOB, self.get)
        router.add("DELETE", _JOB, self.delete)
        router.add("POST", _JOB + "/cancel", self.cancel)
        router.add("POST", _JOB + "/rerun", self.rerun, sleeps_itself=True)
        router.add("GET", _JOB + "/logs", self.logs)
        router.add("GET", _JOB + "/events", self.events)
        router.add("GET", _JOB + "/metrics", self.metrics)
        router.add("GET", _JOB + "/artifacts", self.artifacts)
        router.add("GET", _JOB + "/artifacts/(?P<path>.+)", self.artifact)
        router.add("GET", r"/api/v1/job-groups/(?P<group_id>[^/]+)", self.group)
        router.add("POST", r"/api/v1/job-groups/(?P<group_id>[^/]+)/cancel", self.cancel_group)
        router.add("PUT", r"/uploads/(?P<token>[^/]+)", self.put_upload)
        router.add("GET", r"/signed/(?P<token>[^/]+)", self.signed_download)

    # ── submit and rerun: deduplicated by Idempotency-Key ────────────────────

    def submit(self, request: Request) -> Response:
        def create() -> str:
            body = request.json()
            if "count" in body or "params" in body:
                return self._board.submit_group(body).id
            return self._board.submit(self._board.parse(body)).id

        return self._deduplicated(request, "submit", create)

    def rerun(self, request: Request, job_id: str) -> Response:
        self._board.get(job_id)
        return self._deduplicated(request, f"rerun:{job_id}",
                                  lambda: self._board.rerun(job_id, request.json()).id)

    def _deduplicated(self, request: Request, scope: str, create: Callable[[], str]) -> Response:
        key = request.headers.get("idempotency-key")
        if key:
            replayed = self._keys.begin(scope, key)
            if replayed is not None:
                return self._created(replayed)
        try:
            # A slow submit is slow while it holds the key: a second request meanwhile gets 409.
            request.sleep_in_action()
            result_id = create()
        except BaseException:
            if key:
                self._keys.abandon(scope, key)
            raise
        if key:
            self._keys.complete(scope, key, result_id)
        return self._created(result_id)

    def _created(self, result_id: str) -> Response:
        if result_id.startswith("grp_"):
            return ok(self._board.group_json(self._board.group(result_id), with_jobs=True), status=201)
        return ok(self._board.json(self._board.get(result_id), with_secret=True), status=201)

    # ── reading ───────────────────────────────────────────────────────────────

    def get(self, request: Request, job_id: str) -> Response:
        return ok(self._board.json(self._board.get(job_id)))

    def list(self, request: Request) -> Response:
        statuses = None
        if request.arg("status"):
            statuses = set(request.arg("status").split(","))
            if not statuses <= JOB_STATUSES:
                raise invalid("status", f"must be among {sorted(JOB_STATUSES)}")
        tags = {}
        for tag in request.query.get("tag", []):
            name, sep, value = tag.partition(":")
            if not sep:
                raise invalid("tag", "must be key:value")
            tags[name] = value
        limit = request.int_arg("limit", 20, 1, 100)
        jobs = self._board.listing(
            statuses=statuses,
            tags=tags,
            group_id=request.arg("group_id"),
            query=request.arg("q"),
            gpu_type=request.arg("gpu_type"),
            created_after=_aware_datetime(request.arg("created_after")),
        )
        start = 0
        cursor = request.arg("cursor")
        if cursor:
            ids = [job.id for job in jobs]
            if cursor not in ids:
                raise ApiError(400, "invalid_cursor", "Unknown or expired cursor")
            start = ids.index(cursor) + 1
        page = jobs[start:start + limit]
        has_more = start + limit < len(jobs)
        meta = {"cursor": page[-1].id if has_more else None, "has_more": has_more, "total": len(jobs)}
        return ok([self._board.json(job) for job in page], meta=meta)

    def logs(self, request: Request, job_id: str) -> Response:
        job = self._board.get(job_id)
        after = request.int_arg("after", 0, 0, 2**62)
        limit = request.int_arg("limit", 1000, 1, 10000)
        follow = (request.arg("follow") or "").lower() in ("true", "1")
        page = job.logs.page(after, limit)
        if follow and not page.chunks and not job.logs.ended:
            job.logs.wait_for_news(after, self._settings.follow_hold_s)
            page = job.logs.page(after, limit)
        done = job.logs.ended and page.at_end
        return ok({
            "job_id": job.id,
            "status": job.status,
            "chunks": [chunk.json() for chunk in page.chunks],
            "cursor": page.cursor,
            "truncated": job.logs.truncated,
            "done": done,
        })

    def events(self, request: Request, job_id: str) -> Response:
        job = self._board.get(job_id)
        with self._board.lock:
            return ok(list(job.events))

    def metrics(self, request: Request, job_id: str) -> Response:
        job = self._board.get(job_id)
        step = request.int_arg("step", 60, 60, 86400)
        with self._board.lock:
            return ok(job.metrics(self._settings, step))

    # ── changes ───────────────────────────────────────────────────────────────

    def cancel(self, request: Request, job_id: str) -> Response:
        return ok(self._board.json(self._board.cancel(job_id)))

    def delete(self, request: Request, job_id: str) -> Response:
        self._board.delete(job_id)
        return no_content()

    def group(self, request: Request, group_id: str) -> Response:
        return ok(self._board.group_json(self._board.group(group_id)))

    def cancel_group(self, request: Request, group_id: str) -> Response:
        group: JobGroup = self._board.cancel_group(group_id)
        return ok(self._board.group_json(group))

    # ── outputs and code ─────────────────────────────────────────────────────

    def artifacts(self, request: Request, job_id: str) -> Response:
        job = self._board.get(job_id)
        with self._board.lock:
            found = [] if job.live else [a.json() for a in job.artifacts.values()]
        return ok(found)

    def artifact(self, request: Request, job_id: str, path: str) -> Response:
        job = self._board.get(job_id)
        with self._board.lock:
            artifact = None if job.live else job.artifacts.get(path)
        if artifact is None:
            raise not_found("artifact", path)
        return Response(302, b"", {"Location": self._signed.sign(artifact)})

    def signed_download(self, request: Request, token: str) -> Response:
        artifact = self._signed.resolve(token)
        if artifact is None or not artifact.local.is_file():
            raise ApiError(404, "not_found", "This link is unknown or has expired")
        return Response(200, artifact.local.read_bytes(), {"Content-Type": "application/octet-stream"})

    def create_upload(self, request: Request) -> Response:
        body = request.json()
        size = body.get("bytes")
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 1024**3:
            raise invalid("bytes", "must be between 1 and 1073741824")
        sha256 = body.get("sha256")
        if sha256 is not None and not isinstance(sha256, str):
            raise invalid("sha256", "must be a hex string")
        return ok(self._uploads.create(size, sha256), status=201)

    def put_upload(self, request: Request, token: str) -> Response:
        self._uploads.put(token, request.body)
        return ok({"received": len(request.body)})


def _aware_datetime(raw: str | None) -> datetime | None:
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise invalid("created_after", "must be an ISO 8601 timestamp") from None
    if moment.tzinfo is None:
        raise invalid("created_after", "needs a timezone")
    return moment
