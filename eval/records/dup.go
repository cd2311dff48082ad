package records

import (
	"encoding/binary"
	"sort"

	"github.com/cespare/xxhash/v2"
)

// dupTable finds a repeated (arm, task_id, repeat) while a set is read. It
// is an open-addressing hash table of record indices, four bytes a slot
// and a one-byte fingerprint of the key's hash beside it, so that a probe
// reads a stored record only when the fingerprints agree; a record read
// is checked on its key, so that a hash collision is never taken for a
// duplicate. Beside it, the line each record came from and where each
// input's records begin, to name the first place of a duplicate: about 7
// to 13 bytes a record in all (the table's slack), freed once the inputs
// are read.
type dupTable struct {
	slots []uint32 // 1 + record index; 0 is an empty slot
	fp    []uint8  // fingerprint of the key in each slot
	used  int
	lines []lineRun   // the line of each record, as runs of consecutive lines
	files []fileStart // in the order the inputs were read
	keys  []dupKey    // the key of each record, when the set keeps no records
}

// dupKey is what identifies a request.
type dupKey struct {
	arm, task Sym
	repeat    int
}

// keyAt is the key of record idx of s.
func (s *RecordSet) keyAt(idx int) dupKey {
	if s.keysOnly {
		return s.dups.keys[idx]
	}
	r := s.rec(idx)
	return dupKey{r.Arm, r.TaskID, s.syms.attrs[r.Kind].Repeat}
}

// fileStart says that records from index first on come from input file.
type fileStart struct{ file, first int }

// lineRun says that record first came from line, and the records after
// it, up to the next run, from the lines after that one: records.jsonl
// has a record on every line, so a whole file is usually one run.
type lineRun struct {
	first int
	line  int
}

// addLine notes that record idx came from line.
func (d *dupTable) addLine(idx, line int) {
	if n := len(d.lines); n > 0 {
		if last := d.lines[n-1]; last.line+(idx-last.first) == line {
			return
		}
	}
	d.lines = append(d.lines, lineRun{idx, line})
}

// dupHash hashes a record's key.
func dupHash(arm, task Sym, repeat int) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint32(b[0:], uint32(arm))
	binary.LittleEndian.PutUint32(b[4:], uint32(task))
	binary.LittleEndian.PutUint64(b[8:], uint64(repeat))
	return xxhash.Sum64(b[:])
}

// insert looks c up among the records of s; when none has its key, it
// records c as s's next record (index s.n), which the caller then adds.
func (d *dupTable) insert(s *RecordSet, c *Rec) (prev int, dup bool) {
	if (d.used+1)*4 > len(d.slots)*3 {
		d.grow(s)
	}
	repeat := s.syms.attrs[c.Kind].Repeat
	mask := uint64(len(d.slots) - 1)
	h := dupHash(c.Arm, c.TaskID, repeat)
	fp := uint8(h >> 56)
	for i := h & mask; ; i = (i + 1) & mask {
		slot := d.slots[i]
		if slot == 0 {
			d.slots[i], d.fp[i] = uint32(s.n)+1, fp
			d.used++
			return 0, false
		}
		if d.fp[i] != fp {
			continue
		}
		if s.keyAt(int(slot-1)) == (dupKey{c.Arm, c.TaskID, repeat}) {
			return int(slot - 1), true
		}
	}
}

// grow doubles the table and places every record of s again.
func (d *dupTable) grow(s *RecordSet) {
	d.slots = make([]uint32, max(1024, 2*len(d.slots)))
	d.fp = make([]uint8, len(d.slots))
	mask := uint64(len(d.slots) - 1)
	for idx := range s.n {
		k := s.keyAt(idx)
		h := dupHash(k.arm, k.task, k.repeat)
		i := h & mask
		for d.slots[i] != 0 {
			i = (i + 1) & mask
		}
		d.slots[i], d.fp[i] = uint32(idx)+1, uint8(h>>56)
	}
}

// place is the input (an index in the set's files) and line record idx
// came from.
func (d *dupTable) place(idx int) (file, line int) {
	k := sort.Search(len(d.files), func(i int) bool { return d.files[i].first > idx }) - 1
	j := sort.Search(len(d.lines), func(i int) bool { return d.lines[i].first > idx }) - 1
	return d.files[k].file, d.lines[j].line + (idx - d.lines[j].first)
}
