"""RFC 6962 (and RFC 9162 section 2.1) Merkle tree hashes and proofs, SHA-256, as C2SP
tlog-tiles uses them. Pure functions: no app, no database.

Hashes are 32-byte `bytes`. Leaves are hashed `SHA-256(0x00 || entry)`, interior nodes
`SHA-256(0x01 || left || right)`, and the empty tree is `SHA-256("")`.

Proof *generation* reads the tree through a `subtree(level, index)` callable: the Merkle Tree
Hash of the complete subtree of 2**level leaves starting at leaf `index * 2**level`
(services/transparency/store.py answers it from the stored tile hashes). Every range a proof or
a root needs is such an aligned subtree, or splits into them (RFC 6962 2.1: the left part of a
split is always the largest power of two below the range's size).

Proof *verification* (`check_inclusion`, `check_consistency`) follows RFC 9162 2.1.3.2 and
2.1.4.2 and needs only the hashes given; the monitor (`flask log verify`) uses it.
"""
from __future__ import annotations

import hashlib
from collections.abc import Callable

HASH_SIZE = 32
EMPTY = hashlib.sha256(b"").digest()

Subtree = Callable[[int, int], bytes]


def leaf_hash(entry: bytes) -> bytes:
    """RFC 6962 leaf hash of one log entry (its exact bytes)."""
    return hashlib.sha256(b"\x00" + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """RFC 6962 interior node hash of two child hashes."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def root_of(hashes: list[bytes]) -> bytes:
    """The Merkle Tree Hash of a list of leaf-level hashes (any length; EMPTY for none): the
    hashes are the leaves of a (sub)tree. Used for a tile's hashes (at most 256) and in tests."""
    if not hashes:
        return EMPTY
    level = list(hashes)
    while len(level) > 1:
        # RFC 6962's split (largest power of two first) is exactly bottom-up pairing with an
        # odd last node carried up unchanged.
        nxt = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt.append(level[-1])
        level = nxt
    return level[0]


def _split(n: int) -> int:
    """The largest power of two strictly less than `n` (n >= 2)."""
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


def _is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def range_hash(start: int, end: int, subtree: Subtree) -> bytes:
    """MTH(D[start:end]) for `start` aligned as RFC 6962's recursion leaves it (a multiple of
    the largest power of two not above end - start). EMPTY for an empty range."""
    n = end - start
    if n == 0:
        return EMPTY
    if _is_power_of_two(n) and start % n == 0:
        level = n.bit_length() - 1
        return subtree(level, start >> level)
    k = _split(n)
    return node_hash(range_hash(start, start + k, subtree), range_hash(start + k, end, subtree))


def tree_hash(size: int, subtree: Subtree) -> bytes:
    """The root hash of the tree of the first `size` leaves."""
    return range_hash(0, size, subtree)


def inclusion_proof(index: int, size: int, subtree: Subtree) -> list[bytes]:
    """RFC 6962 2.1.1 PATH(index, D[0:size]): the audit path of leaf `index`, leaf sibling
    first. Raises ValueError unless 0 <= index < size."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of size {size}")

    def path(m: int, start: int, end: int) -> list[bytes]:
        n = end - start
        if n == 1:
            return []
        k = _split(n)
        if m < k:
            return path(m, start, start + k) + [range_hash(start + k, end, subtree)]
        return path(m - k, start + k, end) + [range_hash(start, start + k, subtree)]

    return path(index, 0, size)


def consistency_proof(old: int, new: int, subtree: Subtree) -> list[bytes]:
    """RFC 6962 2.1.2 PROOF(old, D[0:new]); empty when old is 0 or old == new. Raises
    ValueError unless 0 <= old <= new."""
    if not 0 <= old <= new:
        raise ValueError(f"no consistency proof from size {old} to size {new}")
    if old == 0 or old == new:
        return []

    def subproof(m: int, start: int, end: int, complete: bool) -> list[bytes]:
        n = end - start
        if m == n:
            return [] if complete else [range_hash(start, end, subtree)]
        k = _split(n)
        if m <= k:
            return subproof(m, start, start + k, complete) + [range_hash(start + k, end, subtree)]
        return subproof(m - k, start + k, end, False) + [range_hash(start, start + k, subtree)]

    return subproof(old, 0, new, True)


def check_inclusion(leaf: bytes, index: int, size: int, proof: list[bytes], root: bytes) -> bool:
    """RFC 9162 2.1.3.2: True when `proof` proves leaf hash `leaf` at `index` in the tree of
    `size` leaves with root hash `root`."""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in proof:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def check_consistency(old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]) -> bool:
    """RFC 9162 2.1.4.2: True when `proof` shows the tree of `old` leaves (root `old_root`) is
    a prefix of the tree of `new` leaves (root `new_root`)."""
    if old > new or old < 0:
        return False
    if old == new:
        return not proof and old_root == new_root
    if old == 0:
        return not proof  # the empty tree is a prefix of every tree
    if not proof and not _is_power_of_two(old):
        return False
    path = list(proof)
    if _is_power_of_two(old):
        path.insert(0, old_root)
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == old_root and sr == new_root
