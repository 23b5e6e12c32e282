// tlogverify checks a Paper Desk transparency log with Go's own golang.org/x/mod/sumdb/note
// and golang.org/x/mod/sumdb/tlog (Debian: golang-go, golang-golang-x-mod-dev), independently
// of the Python code that built it. tests/test_transparency_log.py runs it when `go` is found:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go run ./tests/go/tlogverify \
//	    -url http://127.0.0.1:5000 -host demo.localhost -vkey 'demo.localhost/log+...' \
//	    [-old checkpoint-file]... [-proof tlog-proof-file]... [-witness vkey]...
//
// It verifies the checkpoint's signature (note.Open), rebuilds the whole tree from the entry
// bundles (tlog.StoredHashes), checks the root, compares every tile the tree is served as
// (tlog.NewTiles, tlog.ReadTileData) byte for byte, reads the tree again through the served
// tiles (tlog.TileHashReader, which checks each tile against the signed root), proves every
// older checkpoint given consistent (tlog.ProveTree, tlog.CheckTree), checks each tlog-proof
// given (tlog.CheckRecord) and each witness cosignature (cosignature/v1, Ed25519). Prints
// "ok: ..." lines, or the first failure and exits 1.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

var (
	base  = flag.String("url", "", "server, http://host:port")
	host  = flag.String("host", "", "Host header (the paper)")
	vkey  = flag.String("vkey", "", "the log's verifier key")
	olds  multi
	proof multi
	wits  multi
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAIL: "+format+"\n", args...)
	os.Exit(1)
}

func get(path string) []byte {
	req, err := http.NewRequest("GET", strings.TrimRight(*base, "/")+path, nil)
	if err != nil {
		fail("%v", err)
	}
	if *host != "" {
		req.Host = *host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fail("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		fail("GET %s: %d", path, resp.StatusCode)
	}
	return body
}

// c2spPath turns tlog's "tile/8/L/N[.p/W]" into tlog-tiles' "tile/L/N[.p/W]".
func c2spPath(t tlog.Tile) string {
	return "/log/tile/" + strings.TrimPrefix(t.Path(), "tile/8/")
}

type checkpoint struct {
	origin string
	tree   tlog.Tree
	text   string
}

func openCheckpoint(msg []byte, v note.Verifier) checkpoint {
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		fail("checkpoint signature: %v", err)
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 {
		fail("checkpoint: %q", n.Text)
	}
	size, err := strconv.ParseInt(lines[1], 10, 64)
	if err != nil {
		fail("checkpoint size: %v", err)
	}
	raw, err := base64.StdEncoding.DecodeString(lines[2])
	if err != nil || len(raw) != tlog.HashSize {
		fail("checkpoint root: %q", lines[2])
	}
	var h tlog.Hash
	copy(h[:], raw)
	return checkpoint{origin: lines[0], tree: tlog.Tree{N: size, Hash: h}, text: n.Text}
}

// served reads tiles from the server, for tlog.TileHashReader.
type served struct{}

func (served) Height() int { return 8 }
func (served) ReadTiles(tiles []tlog.Tile) ([][]byte, error) {
	out := make([][]byte, len(tiles))
	for i, t := range tiles {
		out[i] = get(c2spPath(t))
	}
	return out, nil
}
func (served) SaveTiles([]tlog.Tile, [][]byte) {}

func unbundle(data []byte) [][]byte {
	var out [][]byte
	for len(data) > 0 {
		if len(data) < 2 {
			fail("truncated entry bundle")
		}
		n := int(binary.BigEndian.Uint16(data))
		if len(data) < 2+n {
			fail("truncated entry bundle")
		}
		out = append(out, data[2:2+n])
		data = data[2+n:]
	}
	return out
}

func checkCosignatures(msg []byte, cp checkpoint) {
	for _, w := range wits {
		parts := strings.SplitN(w, "+", 3)
		key, err := base64.StdEncoding.DecodeString(parts[2])
		if len(parts) != 3 || err != nil || len(key) != 33 || key[0] != 0x04 {
			fail("witness vkey %q", w)
		}
		h := sha256.Sum256(append([]byte(parts[0]+"\n\x04"), key[1:]...))
		found := false
		for _, line := range strings.Split(string(msg), "\n") {
			fields := strings.Split(line, " ")
			if len(fields) != 3 || fields[0] != "\u2014" || fields[1] != parts[0] {
				continue
			}
			sig, err := base64.StdEncoding.DecodeString(fields[2])
			if err != nil || len(sig) != 4+8+64 || !bytes.Equal(sig[:4], h[:4]) {
				continue
			}
			ts := binary.BigEndian.Uint64(sig[4:12])
			signed := fmt.Sprintf("cosignature/v1\ntime %d\n%s", ts, cp.text)
			if !ed25519.Verify(ed25519.PublicKey(key[1:]), []byte(signed), sig[12:]) {
				fail("cosignature by %s does not verify", parts[0])
			}
			found = true
		}
		if !found {
			fail("no cosignature by %s", parts[0])
		}
		fmt.Printf("ok: cosigned by %s\n", parts[0])
	}
}

func main() {
	flag.Var(&olds, "old", "an older checkpoint (file) to prove consistent")
	flag.Var(&proof, "proof", "a c2sp.org/tlog-proof@v1 file to check")
	flag.Var(&wits, "witness", "a witness cosignature vkey (type 0x04) whose cosignature must be there")
	flag.Parse()
	verifier, err := note.NewVerifier(*vkey)
	if err != nil {
		fail("vkey: %v", err)
	}
	msg := get("/log/checkpoint")
	cp := openCheckpoint(msg, verifier)
	if cp.origin != verifier.Name() {
		fail("origin %q is not the key name %q", cp.origin, verifier.Name())
	}
	n := cp.tree.N
	fmt.Printf("ok: checkpoint %s size %d signed\n", cp.origin, n)
	checkCosignatures(msg, cp)

	// The whole tree again, from the entries alone.
	var records [][]byte
	for _, t := range tlog.NewTiles(8, 0, n) {
		// NewTiles lists every partial width a tree of size n went through; the bundles that
		// hold the entries are the full ones and the widest partial one.
		if t.L == 0 && (t.W == 256 || int64(t.N)*256+int64(t.W) == n) {
			b := tlog.Tile{H: 8, L: -1, N: t.N, W: t.W}
			got := unbundle(get("/log/tile/entries/" + strings.TrimPrefix(b.Path(), "tile/8/data/")))
			if len(got) != t.W {
				fail("bundle %d holds %d entries, not %d", t.N, len(got), t.W)
			}
			records = append(records, got...)
		}
	}
	if int64(len(records)) != n {
		fail("the bundles hold %d entries, the checkpoint %d", len(records), n)
	}
	var stored []tlog.Hash
	mine := tlog.HashReaderFunc(func(indexes []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(indexes))
		for i, x := range indexes {
			if x >= int64(len(stored)) {
				return nil, errors.New("no such hash")
			}
			out[i] = stored[x]
		}
		return out, nil
	})
	for i, data := range records {
		hashes, err := tlog.StoredHashes(int64(i), data, mine)
		if err != nil {
			fail("entry %d: %v", i, err)
		}
		stored = append(stored, hashes...)
	}
	root, err := tlog.TreeHash(n, mine)
	if err != nil || root != cp.tree.Hash {
		fail("the entries do not give the signed root (%v)", err)
	}
	fmt.Printf("ok: %d entries give the signed root\n", n)
	tiles := tlog.NewTiles(8, 0, n)
	for _, t := range tiles {
		want, err := tlog.ReadTileData(t, mine)
		if err != nil {
			fail("tile %s: %v", t.Path(), err)
		}
		if got := get(c2spPath(t)); !bytes.Equal(got, want) {
			fail("tile %s differs from the tree the entries give", c2spPath(t))
		}
	}
	fmt.Printf("ok: %d tiles match\n", len(tiles))
	thr := tlog.TileHashReader(cp.tree, served{})
	if r, err := tlog.TreeHash(n, thr); err != nil || r != cp.tree.Hash {
		fail("tlog.TileHashReader over the served tiles: %v", err)
	}
	for _, f := range olds {
		data, err := os.ReadFile(f)
		if err != nil {
			fail("%v", err)
		}
		old := openCheckpoint(data, verifier)
		p, err := tlog.ProveTree(n, old.tree.N, thr)
		if err != nil {
			fail("consistency proof %d -> %d: %v", old.tree.N, n, err)
		}
		if err := tlog.CheckTree(p, n, cp.tree.Hash, old.tree.N, old.tree.Hash); err != nil {
			fail("size %d is not consistent with the older checkpoint of size %d: %v", n, old.tree.N, err)
		}
		fmt.Printf("ok: consistent with the checkpoint of size %d\n", old.tree.N)
	}
	for _, f := range proof {
		data, err := os.ReadFile(f)
		if err != nil {
			fail("%v", err)
		}
		head, rest, ok := strings.Cut(string(data), "\n\n")
		lines := strings.Split(head, "\n")
		if !ok || len(lines) < 3 || lines[0] != "c2sp.org/tlog-proof@v1" || !strings.HasPrefix(lines[1], "extra ") {
			fail("%s: not a tlog-proof with extra data", f)
		}
		extra, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(lines[1], "extra "))
		if err != nil {
			fail("%s: extra: %v", f, err)
		}
		index, err := strconv.ParseInt(strings.TrimPrefix(lines[2], "index "), 10, 64)
		if err != nil {
			fail("%s: index: %v", f, err)
		}
		var rp tlog.RecordProof
		for _, l := range lines[3:] {
			raw, err := base64.StdEncoding.DecodeString(l)
			if err != nil || len(raw) != tlog.HashSize {
				fail("%s: proof line %q", f, l)
			}
			var h tlog.Hash
			copy(h[:], raw)
			rp = append(rp, h)
		}
		pc := openCheckpoint([]byte(rest), verifier)
		if err := tlog.CheckRecord(rp, pc.tree.N, pc.tree.Hash, index, tlog.RecordHash(extra)); err != nil {
			fail("%s: inclusion: %v", f, err)
		}
		fmt.Printf("ok: %s proves entry %d in the tree of size %d\n", f, index, pc.tree.N)
	}
}
