package informer

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubetyped/informer/internal/wire"
)

// SnapshotOptions makes an informer keep a snapshot of its cache on disk
// and start from it (a warm restart, see docs/restart.md): on start, a
// snapshot written by an informer of the same configuration becomes the
// cache's initial content and the informer resumes watching where the
// snapshot ends, instead of listing everything again. The zero value
// (no Dir) keeps no snapshot.
//
// Snapshot files hold the cached objects as they are cached, so anything
// the informer caches lands on disk: they are created 0600 in a directory
// that must be 0700 (it is created so if missing). Secrets, and the
// informers marked Sensitive, are never written unless AllowSensitive is
// set, nor are metadata-only or unstructured objects of a resource the
// informer cannot name. A snapshot is restored only from the server and
// cluster it was written from, and never when it is ahead of the server
// (see docs/restart.md, "Never from another cluster").
type SnapshotOptions struct {
	// Dir is the directory snapshots are kept in; empty means none. Each
	// informer writes one file named after its name, Go type and resource,
	// and holds a lock file beside it while it runs, so that two processes
	// never share a snapshot. For an informer made by [For], empty means
	// [FactoryOptions].Snapshot.
	Dir string
	// Interval, if positive, makes a synced informer also write a snapshot
	// every Interval while it runs; zero means only when Run ends (a clean
	// stop), which a crash skips. A negative Interval is rejected. Saves
	// while the informer runs are paced to take at most a twentieth of
	// one core (and so at least twenty times as long as the save when Run
	// ends, which is not paced); docs/restart.md has how long a save of
	// 100,000 pods takes, paced and not.
	Interval time.Duration
	// TransformID names the informer's transform. A snapshot holds
	// objects as the transform left them, and they are not transformed
	// again on restore; so an informer with a Transform (its own or its
	// factory's) keeps snapshots only if TransformID is set, and uses only
	// a snapshot written under the same TransformID. Change it whenever
	// the transform changes what it produces.
	TransformID string
	// Sensitive marks the informer's objects as never to be written to
	// disk (as Secrets always are) unless AllowSensitive is set.
	Sensitive bool
	// AllowSensitive allows snapshots of Secrets and of informers marked
	// Sensitive. Their files hold the objects' data in clear.
	AllowSensitive bool
	// Example, for an informer of an interface type T (such as
	// controller-runtime's client.Object), is an object of the concrete
	// type its ListerWatcher returns, a pointer to a struct: restored
	// objects are decoded into new objects of that type. Without it such
	// an informer keeps no snapshot. Ignored when T is a concrete type.
	Example any
	// ScopeID, for an informer made by [NewInformer] over a ListerWatcher
	// other than those of [NewRESTListerWatcher], [NewDynamicListerWatcher]
	// and [NewMetadataListerWatcher] (which say what they list, and from
	// which server), names what the ListerWatcher lists beyond the
	// informer's resource (its namespace, selectors, dropped fields and
	// server), which the informer cannot see: a snapshot is restored only
	// by an informer with the same ScopeID. Change it whenever what the
	// ListerWatcher lists changes.
	ScopeID string
}

// validate rejects options that cannot work.
func (o SnapshotOptions) validate() error {
	if o.Interval < 0 {
		return fmt.Errorf("Snapshot.Interval must not be negative, got %v", o.Interval)
	}
	return nil
}

// SnapshotStats counts an informer's snapshot saves and restores (see
// [SnapshotOptions]). Every failure and rejected snapshot is also logged,
// once per restore attempt and once per run of failed saves.
type SnapshotStats struct {
	// Saved counts snapshots written.
	Saved int64
	// SaveErrors counts snapshots that could not be written (the directory
	// is not writable, the disk is full...); the previous snapshot, if any,
	// stays in place.
	SaveErrors int64
	// LastSaveBytes is the size of the last snapshot written.
	LastSaveBytes int64
	// Restored is 1 once the informer started from a snapshot: its objects
	// were the cache's starting point, whether the watch could be resumed
	// or the informer had to list.
	Restored int64
	// RestoredObjects is the number of objects read from the snapshot.
	RestoredObjects int64
	// Rejected counts snapshots found but not used: unreadable, corrupt,
	// truncated, written by an informer of another configuration or by a
	// newer format, or locked by another process; and snapshots or lock
	// files that are symbolic links (never followed) or special files.
	// The informer then starts cold; a refused lock file also keeps it
	// from writing snapshots, while a refused snapshot file is replaced by
	// the next save.
	Rejected int64
	// ResumedWatches is 1 when the informer synced from the snapshot
	// without listing the objects: by resuming the watch at the
	// snapshot's resource version, or because a list of the server's
	// versions named exactly the objects it held (see docs/restart.md);
	// RestoreRelists is 1 when it could do neither (the server no longer
	// had that version, "410 Gone", and objects had changed) and the
	// informer listed, reusing the restored objects still current.
	ResumedWatches, RestoreRelists int64
	// RemovedTempFiles counts the temporary files of this informer's
	// interrupted saves (a crash or kill during a save leaves one)
	// removed when it started, under its lock. One that cannot be removed
	// is logged as an error and not counted; the informer starts as
	// without it, and the next start tries again.
	RemovedTempFiles int64
}

// snapshotFormat is the version of the file format this code writes; it
// reads no other. Format 3 decodes JSON records keeping integers as int64
// and writes the integral floats of interface values with a fraction, so
// that numbers are restored as decoded from the wire (snapshot_json.go);
// format 2 wrote those floats without, read back as int64, and read
// integers of CRD Go types' interface values as float64. Format 2 writes
// protobuf objects as records of references (internal/wire/refcode.go);
// format 1 wrote their encodings.
const snapshotFormat = 3

// snapshotMagic starts every snapshot file.
const snapshotMagic = "KTISNAP\n"

// snapshotSuffix ends snapshot file names.
const snapshotSuffix = ".snapshot"

// snapshotMaxHeader bounds the header a reader accepts, so that a corrupt
// length cannot make it allocate without limit.
const snapshotMaxHeader = 1 << 20

// snapshotMaxRecord bounds one object's encoding (the API server's limit
// on a request is 3 MiB; objects in etcd are at most 1.5 MiB).
const snapshotMaxRecord = 64 << 20

// snapshotHeader is the first part of a snapshot file: what makes two
// caches comparable, and what the objects are consistent at.
type snapshotHeader struct {
	// Format is snapshotFormat when written.
	Format int `json:"format"`
	// Scope is the configuration the objects were cached under.
	Scope snapshotScope `json:"scope"`
	// Encoding is "protobuf" or "json".
	Encoding string `json:"encoding"`
	// ResourceVersion is the resource version the objects are consistent
	// at: the cache's when they were taken.
	ResourceVersion string `json:"resourceVersion"`
	// Objects is the number of object records.
	Objects int `json:"objects"`
	// Written is when the snapshot was taken (for people reading it).
	Written time.Time `json:"written"`
	// ClusterUID is the UID of the kube-system namespace of the cluster
	// the objects were listed from, "" if it could not be read: a restore
	// checks it against the server's (see serverIdentity).
	ClusterUID string `json:"clusterUID,omitempty"`
}

// snapshotScope is what must be equal for two informers' caches to hold
// the same objects: a snapshot is only restored into an informer of the
// same scope.
type snapshotScope struct {
	Type          string   `json:"type"`
	Resource      string   `json:"resource"`
	Name          string   `json:"name"`
	Namespace     string   `json:"namespace,omitempty"`
	LabelSelector string   `json:"labelSelector,omitempty"`
	FieldSelector string   `json:"fieldSelector,omitempty"`
	Shard         string   `json:"shard,omitempty"`
	DropFields    []string `json:"dropFields,omitempty"`
	TransformID   string   `json:"transformID,omitempty"`
	ScopeID       string   `json:"scopeID,omitempty"`
	// Server names the API server the objects were listed from; zero for
	// a ListerWatcher that does not say (see describedListerWatcher).
	Server serverIdentity `json:"server,omitzero"`
}

// differences names the fields in which s and o differ.
func (s snapshotScope) differences(o snapshotScope) []string {
	var diff []string
	for _, f := range []struct {
		name string
		a, b string
	}{
		{"type", s.Type, o.Type},
		{"resource", s.Resource, o.Resource},
		{"name", s.Name, o.Name},
		{"namespace", s.Namespace, o.Namespace},
		{"label selector", s.LabelSelector, o.LabelSelector},
		{"field selector", s.FieldSelector, o.FieldSelector},
		{"shard", s.Shard, o.Shard},
		{"transform", s.TransformID, o.TransformID},
		{"scope id", s.ScopeID, o.ScopeID},
		{"server", s.Server.Host, o.Server.Host},
		{"server CA", s.Server.CA, o.Server.CA},
		{"cluster", s.Server.Cluster, o.Server.Cluster},
	} {
		if f.a != f.b {
			diff = append(diff, fmt.Sprintf("%s %q (want %q)", f.name, f.a, f.b))
		}
	}
	if !slices.Equal(s.DropFields, o.DropFields) {
		diff = append(diff, fmt.Sprintf("dropped fields %q (want %q)", s.DropFields, o.DropFields))
	}
	return diff
}

// snapshotCodec encodes and decodes the objects of a T.
type snapshotCodec[T Object] struct {
	encoding string // "protobuf" or "json"
	// newObject returns a new object of the objects' type.
	newObject func() T
	// interns is the table restored objects are decoded through (the
	// ListerWatcher's: it says whether they share sub-objects, and records
	// of references are read under its lock; see wire.RefDecoder); nil for
	// a table of the restore's own.
	interns *wire.InternTable
}

// protobufSizer is implemented by the gogo-generated protobuf types of
// k8s.io/api and apimachinery: a record is encoded into a reused buffer.
type protobufSizer interface {
	Size() int
	MarshalToSizedBuffer(dAtA []byte) (int, error)
}

// newSnapshotCodec chooses protobuf for types that have it (built-in types,
// metadata-only objects), decoded by the REST ListerWatcher's decoder with
// interns if not nil, and JSON for the others.
func newSnapshotCodec[T Object](interns *wire.InternTable) snapshotCodec[T] {
	return newSnapshotCodecOf[T](interns, reflect.TypeFor[T]())
}

// newSnapshotCodecOf is newSnapshotCodec for objects of itemType, a
// pointer to a struct implementing T (see snapshotItemType).
func newSnapshotCodecOf[T Object](interns *wire.InternTable, itemType reflect.Type) snapshotCodec[T] {
	elem := itemType.Elem()
	c := snapshotCodec[T]{encoding: "json", interns: interns, newObject: func() T { return reflect.New(elem).Interface().(T) }}
	if _, ok := any(c.newObject()).(protobufSizer); ok {
		if _, ok := any(c.newObject()).(wire.ProtobufMessage); ok {
			c.encoding = "protobuf"
		}
	}
	return c
}

// snapshotEncoder encodes the records of one snapshot: in protobuf, as
// records of references (internal/wire/refcode.go), whose string table
// the snapshot's records build in order.
type snapshotEncoder[T Object] struct {
	codec snapshotCodec[T]
	refs  *wire.RefEncoder
	// pb and rec are reused buffers: the object's protobuf encoding and
	// its record.
	pb, rec []byte
}

// newEncoder returns the encoder of one snapshot's records.
func (c snapshotCodec[T]) newEncoder() *snapshotEncoder[T] {
	e := &snapshotEncoder[T]{codec: c}
	if c.encoding == "protobuf" {
		e.refs = wire.NewRefEncoder()
	}
	return e
}

// encode returns obj's record, valid until the next call.
func (e *snapshotEncoder[T]) encode(obj T) ([]byte, error) {
	if e.codec.encoding == "json" {
		return encodeJSONRecord(obj)
	}
	m := any(obj).(protobufSizer)
	size := m.Size()
	if cap(e.pb) < size {
		e.pb = make([]byte, size)
	}
	e.pb = e.pb[:size]
	n, err := m.MarshalToSizedBuffer(e.pb)
	if err != nil {
		return nil, err
	}
	e.rec = e.refs.Append(e.rec[:0], e.pb[size-n:], any(obj).(wire.ProtobufMessage))
	return e.rec, nil
}

// snapshotDecoder decodes the records of one snapshot, in their order.
type snapshotDecoder[T Object] struct {
	codec   snapshotCodec[T]
	refs    *wire.RefDecoder
	interns *wire.InternTable
}

// newDecoder returns the decoder of one snapshot's records.
func (c snapshotCodec[T]) newDecoder() *snapshotDecoder[T] {
	d := &snapshotDecoder[T]{codec: c, interns: c.interns}
	if c.encoding == "protobuf" {
		d.refs = wire.NewRefDecoder()
		if d.interns == nil {
			d.interns = wire.NewInternTable()
		}
	}
	return d
}

// decode decodes one record into a new object.
func (d *snapshotDecoder[T]) decode(rec []byte) (T, error) {
	obj := d.codec.newObject()
	if d.codec.encoding == "json" {
		return obj, decodeJSONRecord(rec, obj)
	}
	return obj, d.refs.Unmarshal(d.interns, rec, any(obj).(wire.ProtobufMessage))
}

// castagnoli is the CRC-32C table: hardware-accelerated on amd64 and
// arm64, so the checksum costs little next to encoding.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotFile is where a snapshot is written: an *os.File, or a test's
// file that fails (a full disk).
type snapshotFile interface {
	io.Writer
	Sync() error
	Close() error
	Name() string
}

// createSnapshotTemp creates the temporary file a snapshot is written to,
// 0600 (os.CreateTemp's mode), in the snapshot's directory so that the
// rename is atomic. os.CreateTemp creates with O_EXCL, which follows no
// symbolic link (a name taken, by a link or anything else, makes it try
// another), and the rename replaces a link at the snapshot's path instead
// of writing through it. A variable for tests.
var createSnapshotTemp = func(dir, pattern string) (snapshotFile, error) {
	return os.CreateTemp(dir, pattern)
}

// snapshotTempInfix joins a snapshot file's name and the random part of
// the names of its temporary files: os.CreateTemp replaces the pattern's
// "*" by decimal digits.
const snapshotTempInfix = ".tmp-"

// isSnapshotTemp reports whether name is the name of a temporary file of
// the snapshot file named base: base, snapshotTempInfix and digits only.
// Digits only, because another informer's files may start with the same
// characters: the name of an informer named like base + ".tmp-1" begins
// with them too, but does not end in digits (snapshotFileName).
func isSnapshotTemp(name, base string) bool {
	random, ok := strings.CutPrefix(name, base+snapshotTempInfix)
	if !ok || random == "" {
		return false
	}
	for _, r := range random {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// removeSnapshotTemps removes the temporary files of the snapshot at path
// that interrupted saves left (see isSnapshotTemp), which only the holder
// of its lock may write: call it with the lock held. os.Remove removes a
// symbolic link, not what it points to. It returns the names removed and
// an error for each file it could not remove (or for the directory, if
// unreadable).
func removeSnapshotTemps(path string) (removed []string, errs []error) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(filepath.Clean(dir))
	if err != nil {
		return nil, []error{fmt.Errorf("listing the snapshot directory: %w", err)}
	}
	for _, e := range entries {
		if !isSnapshotTemp(e.Name(), base) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, e.Name())
	}
	return removed, errs
}

// writeSnapshotPaced writes objects, consistent at header.ResourceVersion, to
// path: into a temporary file that is synced, renamed over path, and made
// durable by syncing the directory, so that a crash leaves either the old
// snapshot or the new one, never a torn one. It returns the bytes
// written. The objects are read, not modified. pace, if not nil, paces
// the encoding (snapshot_pace.go).
func writeSnapshotPaced[T Object](path string, header snapshotHeader, codec snapshotCodec[T], objects []T, pace *savePacer) (int64, error) {
	dir := filepath.Dir(path)
	f, err := createSnapshotTemp(dir, filepath.Base(path)+snapshotTempInfix+"*")
	if err != nil {
		return 0, fmt.Errorf("creating a snapshot file: %w", err)
	}
	written, err := encodeSnapshotPaced(f, header, codec, objects, pace)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return 0, fmt.Errorf("writing snapshot %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return 0, fmt.Errorf("writing snapshot %s: syncing its directory: %w", path, err)
	}
	return written, nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}

// countingWriter counts the bytes written through it and hashes them.
type countingWriter struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// encodeSnapshotPaced writes the file's content to w: the magic, the header's
// length and JSON, each object's length and record (its JSON, or for
// protobuf its record of references, internal/wire/refcode.go), a zero
// length, and the CRC-32C of everything before it. It returns the bytes
// written. pace, if not nil, paces it, and its error ends it.
func encodeSnapshotPaced[T Object](w io.Writer, header snapshotHeader, codec snapshotCodec[T], objects []T, pace *savePacer) (int64, error) {
	if header.Format == 0 {
		header.Format = snapshotFormat
	}
	header.Encoding, header.Objects = codec.encoding, len(objects)
	headerJSON, err := json.Marshal(header)
	if err != nil {
		return 0, fmt.Errorf("encoding the snapshot's header: %w", err)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countingWriter{w: bw, crc: crc32.New(castagnoli)}
	var lenBuf [binary.MaxVarintLen64]byte
	writeRecord := func(data []byte) error {
		if _, err := cw.Write(binary.AppendUvarint(lenBuf[:0], uint64(len(data)))); err != nil {
			return err
		}
		_, err := cw.Write(data)
		return err
	}
	if _, err := io.WriteString(cw, snapshotMagic); err != nil {
		return 0, err
	}
	if err := writeRecord(headerJSON); err != nil {
		return 0, err
	}
	enc := codec.newEncoder()
	for _, obj := range objects {
		data, err := enc.encode(obj)
		if err != nil {
			return 0, fmt.Errorf("encoding %s: %w", KeyOf(obj), err)
		}
		if len(data) == 0 {
			// Zero ends the records; an object always encodes to something.
			return 0, fmt.Errorf("encoding %s: empty encoding", KeyOf(obj))
		}
		if err := writeRecord(data); err != nil {
			return 0, err
		}
		if err := pace.chunk(); err != nil {
			return 0, err
		}
	}
	if err := writeRecord(nil); err != nil {
		return 0, err
	}
	if _, err := bw.Write(binary.BigEndian.AppendUint32(lenBuf[:0], cw.crc.Sum32())); err != nil {
		return 0, err
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	return cw.n + 4, nil
}

// Reasons a snapshot is rejected, for tests to tell them apart; the error
// says more.
var (
	errSnapshotCorrupt   = errors.New("the snapshot is corrupt or truncated")
	errSnapshotFormat    = errors.New("the snapshot has another format")
	errSnapshotLocked    = errors.New("another process holds the snapshot's lock")
	errSnapshotDirectory = errors.New("the snapshot directory is not private")
	// errSnapshotNotRegular refuses a symbolic link (never followed) or a
	// special file where a snapshot or its lock belongs.
	errSnapshotNotRegular = errors.New("not a regular file: refusing to follow or open it")
)

// checkRegular returns f if it is a regular file, else closes it and
// returns an error wrapping errSnapshotNotRegular (see openNoFollow).
func checkRegular(f *os.File) (*os.File, error) {
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s is a %v", errSnapshotNotRegular, f.Name(), info.Mode().Type())
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openedSnapshot is a snapshot whose header has been read and checked,
// its objects not yet (readObjects).
type openedSnapshot[T Object] struct {
	header snapshotHeader
	f      *os.File
	r      *snapshotReader
	codec  snapshotCodec[T]
}

// openSnapshot opens the snapshot at path and reads and checks its header:
// it must have been written under want, in this format and encoding. It
// returns an error wrapping os.ErrNotExist if there is none, and one
// wrapping errSnapshotNotRegular for a symbolic link (not followed) or a
// special file (openNoFollow). The caller reads the objects with
// readObjects, or closes the snapshot.
func openSnapshot[T Object](path string, want snapshotScope, codec snapshotCodec[T]) (_ *openedSnapshot[T], err error) {
	f, err := openNoFollow(path, os.O_RDONLY)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r := &snapshotReader{br: bufio.NewReaderSize(f, snapshotReadBuffer), left: info.Size() - 4}
	magic := make([]byte, len(snapshotMagic))
	if err := r.readFull(magic); err != nil || string(magic) != snapshotMagic {
		return nil, fmt.Errorf("%w: no snapshot magic", errSnapshotCorrupt)
	}
	headerJSON, err := r.record(snapshotMaxHeader)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %w", errSnapshotCorrupt, err)
	}
	var header snapshotHeader
	if err := json.Unmarshal(headerJSON, &header); err != nil {
		return nil, fmt.Errorf("%w: header: %w", errSnapshotCorrupt, err)
	}
	if header.Format != snapshotFormat {
		return nil, fmt.Errorf("%w: format %d, this informer reads %d", errSnapshotFormat, header.Format, snapshotFormat)
	}
	if diff := header.Scope.differences(want); len(diff) > 0 {
		return nil, fmt.Errorf("%w: %s", errSnapshotForeign, strings.Join(diff, ", "))
	}
	if header.Encoding != codec.encoding {
		return nil, fmt.Errorf("%w: encoding %q, want %q", errSnapshotForeign, header.Encoding, codec.encoding)
	}
	if header.Objects < 0 || int64(header.Objects) > r.left {
		return nil, fmt.Errorf("%w: %d objects in %d bytes", errSnapshotCorrupt, header.Objects, r.left)
	}
	return &openedSnapshot[T]{header: header, f: f, r: r, codec: codec}, nil
}

// close closes the snapshot's file, whose objects will not be read.
func (s *openedSnapshot[T]) close() { s.f.Close() }

// errRestoreAbandoned ends a readObjects whose abandon flag was set.
var errRestoreAbandoned = errors.New("the restore was abandoned")

// readObjects decodes the snapshot's objects and closes its file. It reads
// the file once, in snapshotReadBuffer-sized pieces, decoding each record
// from a buffer it reuses as it goes and updating the checksum, so that
// neither the file's bytes nor a copy of them are alive beside the decoded
// objects (the decoders copy what they keep); if the checksum at the end
// does not match, the objects decoded are dropped and the snapshot
// rejected, as when a record does not decode. Once abandon (if not nil) is
// set, it stops at the next record with errRestoreAbandoned.
func (s *openedSnapshot[T]) readObjects(abandon *atomic.Bool) ([]T, error) {
	defer s.close()
	r, header := s.r, s.header
	// The objects decoded will stay: see raiseGCGoal.
	defer raiseGCGoal(snapshotHeapFactor * r.left)()
	objects := make([]T, 0, header.Objects)
	dec := s.codec.newDecoder()
	var zero T
	for {
		if abandon != nil && abandon.Load() {
			return nil, errRestoreAbandoned
		}
		rec, err := r.record(snapshotMaxRecord)
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %w", errSnapshotCorrupt, len(objects), err)
		}
		if len(rec) == 0 {
			break
		}
		obj, err := dec.decode(rec)
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %w", errSnapshotCorrupt, len(objects), err)
		}
		if obj == zero || obj.GetName() == "" {
			return nil, fmt.Errorf("%w: object %d has no name", errSnapshotCorrupt, len(objects))
		}
		objects = append(objects, obj)
	}
	if r.left != 0 || len(objects) != header.Objects {
		return nil, fmt.Errorf("%w: %d objects and %d bytes after them, header says %d objects", errSnapshotCorrupt, len(objects), r.left, header.Objects)
	}
	var sum [4]byte
	if _, err := io.ReadFull(r.br, sum[:]); err != nil {
		return nil, fmt.Errorf("%w: checksum: %w", errSnapshotCorrupt, err)
	}
	if want := binary.BigEndian.Uint32(sum[:]); r.crc != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", errSnapshotCorrupt, r.crc, want)
	}
	return objects, nil
}

// snapshotReadBuffer is the size of openSnapshot's reads: large enough that
// the reads cost nothing next to decoding, small next to the file.
const snapshotReadBuffer = 1 << 20

// snapshotReader reads a snapshot's content, up to the checksum, and
// computes its CRC-32C.
type snapshotReader struct {
	br *bufio.Reader
	// left is what is left to read before the checksum.
	left int64
	crc  uint32
	// buf holds the last record; the next one reuses it.
	buf []byte
}

// readFull fills p, which must not reach past the checksum.
func (r *snapshotReader) readFull(p []byte) error {
	if int64(len(p)) > r.left {
		return io.ErrUnexpectedEOF
	}
	n, err := io.ReadFull(r.br, p)
	r.crc = crc32.Update(r.crc, castagnoli, p[:n])
	r.left -= int64(n)
	return err
}

// record reads one length-prefixed record of at most limit bytes. The
// result is valid until the next call.
func (r *snapshotReader) record(limit uint64) ([]byte, error) {
	prefix, _ := r.br.Peek(int(min(binary.MaxVarintLen64, r.left)))
	n, size := binary.Uvarint(prefix)
	if size <= 0 {
		return nil, errors.New("bad length")
	}
	r.crc = crc32.Update(r.crc, castagnoli, prefix[:size])
	if _, err := r.br.Discard(size); err != nil {
		return nil, err
	}
	r.left -= int64(size)
	if n > limit || n > uint64(r.left) {
		return nil, fmt.Errorf("length %d past the end", n)
	}
	if uint64(cap(r.buf)) < n {
		r.buf = make([]byte, n, max(n, uint64(2*cap(r.buf))))
	}
	r.buf = r.buf[:n]
	if err := r.readFull(r.buf); err != nil {
		return nil, err
	}
	return r.buf, nil
}

// snapshotFileName is the file an informer's snapshots are written to in
// dir: the informer's name (or type) and resource, in characters safe in
// any file system, and a hash of them, so that two informers never share
// a file by accident. The rest of the scope is checked on restore, so
// that a changed configuration finds its old snapshot and rejects it.
func snapshotFileName(scope snapshotScope) string {
	label := scope.Name
	if label == "" {
		label = scope.Type
	}
	label += "_" + scope.Resource
	var b strings.Builder
	for _, r := range label {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 80 {
			break
		}
	}
	crc := crc32.Checksum([]byte(scope.Name+"\x00"+scope.Type+"\x00"+scope.Resource), castagnoli)
	return fmt.Sprintf("%s-%08x%s", b.String(), crc, snapshotSuffix)
}

// prepareSnapshotDir creates dir 0700 if missing, and refuses one that
// others can read or write: snapshots hold the cached objects.
func prepareSnapshotDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating the snapshot directory: %w", err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("reading the snapshot directory: %w", err)
	}
	if !info.IsDir() {
		return fmt.Errorf("snapshot directory %s is not a directory", dir)
	}
	if perm := info.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s has mode %v, want 0700", errSnapshotDirectory, dir, perm)
	}
	return nil
}
