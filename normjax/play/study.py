"""Study mode of `normjax play` (``--assign N``): norms drawn per participant, consent first.

Assignment.  Participants are numbered in the order they agree to the
consent page (0, 1, ...).  Participant k gets the N norms of slots
kN .. kN+N-1 of a seeded schedule: slot j is of family ``F[j % len(F)]``
(F: the pool's families in a seeded order), and the c-th slot of family f
takes norm ``L_f[c % len(L_f)]`` (L_f: the pool's norms of f, seeded
shuffle).  So a participant's N norms come from N different families
(N <= len(F)), every family gets the same share of slots, and the norms of a
family are played in turn, as in the paper's study (2 norms per participant,
drawn across the four families).  N larger than len(F) is allowed while
no family would have to repeat a norm within one participant.

That is the ``balance="families"`` scheme.  The default, ``balance="norms"``, is the
paper's design (`normjax.play.design.next_norms`): each new participant gets the
least-played norms of the pool, from different families, so the pool's norms are played
equally often (+-1); a freed slot (`Study.set_status`) stops counting.

Everything a restart needs is on disk: ``OUT/study.json`` (the study's
settings; a restart with other settings is refused), and per participant
``OUT/<id>/consent.json`` (when they agreed, to which text) and
``OUT/<id>/assignment.json`` (their index and norms).  Files are written
whole (temporary file, fsync, rename), so a killed server leaves either
the old file or the new one.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import numpy as np

from normjax.norms import FAMILIES, FAMILY_OF, NORMS
from normjax.play.design import check_balanced_assign, next_norms

STUDY_FILE = "study.json"
ASSIGNMENT_FILE = "assignment.json"
CONSENT_RECORD = "consent.json"
STATUS_FILE = "status.json"  # the admin's marks: excluded from the export, slot freed
BALANCES = ("norms", "families")
CONSENT_FILE = "consent.md"  # the default consent text's place in --out
TEMPLATE = Path(__file__).with_name("consent.md")
MAX_CONSENT_CHARS = 100_000
_SALT = 0x57D1  # keeps the schedule's stream apart from other uses of the study seed


def _families(pool: list[int], seed: int) -> tuple[list[int], dict[int, list[int]]]:
    """(the pool's families in the seeded order, {family: its norms, seeded shuffle})."""
    rng = np.random.default_rng([_SALT, seed])
    present = sorted({int(FAMILY_OF[n]) for n in pool})
    order = [present[i] for i in rng.permutation(len(present))]
    norms = {f: [int(x) for x in rng.permutation(sorted(n for n in pool if FAMILY_OF[n] == f))] for f in present}
    return order, norms


def max_assign(pool: list[int]) -> int:
    """The largest N for which no participant gets a norm twice: families x the smallest family's norms."""
    sizes = [sum(1 for n in pool if FAMILY_OF[n] == f) for f in range(len(FAMILIES))]
    sizes = [s for s in sizes if s]
    return len(sizes) * min(sizes) if sizes else 0


def check_assign(n, pool: list[int]) -> int:
    """`n` if it is a valid --assign for the pool; ValueError naming the value and the allowed range."""
    top = max_assign(pool)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= top:
        raise ValueError(
            f"--assign must be an integer in 1..{top} for this pool of {len(pool)} norm(s) "
            f"({top} = its families x the norms of its smallest family, so nobody gets a norm twice), "
            f"got {n!r}"
        )
    return n


def assign_norms(index: int, n: int, pool: list[int], seed: int) -> list[int]:
    """The norm ids of participant number `index` (module docstring); deterministic in all arguments."""
    check_assign(n, pool)
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"participant index must be a non-negative integer, got {index!r}")
    order, norms = _families(sorted(set(pool)), seed)
    out = []
    for j in range(index * n, index * n + n):
        f = order[j % len(order)]
        c = j // len(order)  # earlier slots of family f
        out.append(norms[f][c % len(norms[f])])
    assert len(set(out)) == n  # check_assign's bound guarantees it
    return out


def write_json(path: Path, obj) -> None:
    """Write `obj` to `path` whole: a temporary file, fsynced, renamed over it."""
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(json.dumps(obj, indent=1))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def load_consent(out_dir, consent_file=None) -> tuple[str, Path]:
    """(the consent text, its file): `consent_file` exactly, else ``OUT/consent.md`` (copied from
    the shipped template on first start).  Only that one file is read."""
    if consent_file is None:
        path = Path(out_dir) / CONSENT_FILE
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(TEMPLATE, path)
    else:
        path = Path(consent_file)
    if not path.is_file():
        raise ValueError(
            f"--consent {path}: not a file; give the researcher's consent text (markdown), or leave "
            f"--consent out to use (and edit) {Path(out_dir) / CONSENT_FILE}"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"--consent {path}: not UTF-8 text") from None
    if not text.strip() or len(text) > MAX_CONSENT_CHARS:
        raise ValueError(f"--consent {path}: the text must have 1..{MAX_CONSENT_CHARS} characters, has {len(text)}")
    return text, path.resolve()


class Study:
    """The study of one --out directory: its settings, assignments and consent records."""

    def __init__(
        self,
        out_dir,
        pool: list[int],
        assign: int,
        study_seed: int = 0,
        consent_file=None,
        balance: str = "norms",
        **protocol,
    ):
        self.out, self.pool, self.assign, self.study_seed = Path(out_dir), sorted(set(pool)), assign, study_seed
        if balance not in BALANCES:
            raise ValueError(f"balance must be one of {', '.join(BALANCES)}, got {balance!r}")
        self.balance = balance
        (check_balanced_assign if balance == "norms" else check_assign)(assign, self.pool)
        settings = dict(
            format="normjax.play-study/1",
            assign=assign,
            study_seed=study_seed,
            pool=[NORMS[n].name for n in self.pool],
            **({"balance": balance} if balance != "families" else {}),  # a families study.json has no key
            **protocol,
        )
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / STUDY_FILE
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            diff = [k for k in settings if old.get(k) != settings[k]]
            if diff:
                raise ValueError(
                    f"{self.out} holds a study with other settings ("
                    + ", ".join(f"{k}: {old.get(k)!r} -> {settings[k]!r}" for k in diff)
                    + "); start it with its own settings or use a new --out"
                )
        else:
            write_json(path, settings)
        self.text, self.consent_path = load_consent(self.out, consent_file)
        self.sha256 = hashlib.sha256(self.text.encode("utf-8")).hexdigest()
        self.lock = threading.Lock()

    def consented(self, pid: str) -> bool:
        return (self.out / pid / CONSENT_RECORD).exists()

    def agree(self, pid: str) -> dict:
        """Record the participant's consent (the first time only) and their assignment; the record."""
        d = self.out / pid
        with self.lock:
            if not (d / CONSENT_RECORD).exists():
                d.mkdir(parents=True, exist_ok=True)
                now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
                write_json(
                    d / CONSENT_RECORD,
                    dict(
                        participant=pid, agreed_at=now, consent_sha256=self.sha256, consent_file=str(self.consent_path)
                    ),
                )
            self._assignment(pid)
        return json.loads((d / CONSENT_RECORD).read_text(encoding="utf-8"))

    def status(self, pid: str) -> dict:
        """The admin's marks of a participant: {"excluded": bool, "freed": bool} (both false if none)."""
        path = self.out / pid / STATUS_FILE
        got = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        return dict(excluded=bool(got.get("excluded")), freed=bool(got.get("freed")))

    def set_status(self, pid: str, excluded: bool, freed: bool = False) -> dict:
        """Exclude a participant from the export; `freed` also gives their norms to the next participant."""
        with self.lock:
            if not (self.out / pid / ASSIGNMENT_FILE).is_file():
                raise ValueError(f"participant {pid!r} has no assignment")
            now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            rec = dict(excluded=bool(excluded or freed), freed=bool(freed), at=now)
            write_json(self.out / pid / STATUS_FILE, rec)
        return rec

    def norms(self, pid: str) -> list[int]:
        """The participant's assigned norm ids (made on agreeing; a restart reads them back)."""
        with self.lock:
            return self._assignment(pid)

    def _assignment(self, pid: str) -> list[int]:
        path = self.out / pid / ASSIGNMENT_FILE
        if path.exists():
            return [NORMS[i].id for i in json.loads(path.read_text(encoding="utf-8"))["norm_ids"]]
        records = [json.loads(p.read_text(encoding="utf-8")) for p in self.out.glob(f"*/{ASSIGNMENT_FILE}")]
        index = max((r["index"] for r in records), default=-1) + 1
        if self.balance == "families":
            ids = assign_norms(index, self.assign, self.pool, self.study_seed)
        else:
            counts: dict[int, int] = {}
            for r in records:
                if not self.status(r["participant"]).get("freed"):
                    for n in r["norm_ids"]:
                        counts[n] = counts.get(n, 0) + 1
            ids = next_norms(counts, self.pool, self.assign, self.study_seed)
        write_json(
            path,
            dict(
                participant=pid,
                index=index,
                norm_ids=ids,
                norms=[NORMS[i].name for i in ids],
                assign=self.assign,
                study_seed=self.study_seed,
            ),
        )
        return ids


__all__ = [
    "ASSIGNMENT_FILE",
    "BALANCES",
    "STATUS_FILE",
    "CONSENT_FILE",
    "CONSENT_RECORD",
    "STUDY_FILE",
    "Study",
    "assign_norms",
    "check_assign",
    "load_consent",
    "max_assign",
    "write_json",
]
