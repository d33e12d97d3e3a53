package sqlite

import (
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
)

// body stores raw, whose ObjectHash is hashHex, once by hash and returns
// its row id. Bodies of an object (objRow != 0) are delta-encoded against
// the object's keyframe.
func (at *appendTx) body(raw []byte, hashHex string, objRow int64, kind kindKey) (int64, error) {
	var kf keyframe
	var haveKF bool
	if objRow != 0 {
		var err error
		if kf, haveKF, err = at.keyframe(objRow); err != nil {
			return 0, err
		}
		if haveKF && kf.lastHash == hashHex {
			return kf.lastBodyID, nil
		}
	}
	id, stored := at.knownBodies[bodyKey{objRow, hashHex}]
	if !stored {
		enc, isDelta := at.deltaOf(raw, objRow, kind, kf, haveKF)
		if !isDelta {
			data, err := deflateKeyframe(raw)
			if err != nil {
				return 0, fmt.Errorf("compress body: %w", err)
			}
			enc = bodyEncoding{data: data}
		}
		id = at.queueBody(raw, hashHex, objRow, enc)
		switch {
		case isDelta:
			kf, haveKF = enc.kf, true
		case objRow != 0:
			kf, haveKF = keyframe{bodyID: id, raw: raw}, true
			at.kindKeyframes[kind] = kf
		}
	}
	if objRow != 0 && haveKF {
		kf.lastHash, kf.lastBodyID = hashHex, id
		at.keyframes[objRow] = kf
	}
	return id, nil
}

// bodyEncoding is how a new body is stored: a delta (data) against the
// keyframe kf, whose body id is base, or a keyframe (base nil).
type bodyEncoding struct {
	base any
	data []byte
	kf   keyframe
}

// deltaOf encodes raw as a delta against the object's keyframe kf (when
// haveKF) or, for a new object, against the latest keyframe of its kind;
// false when there is no keyframe or the delta is not small enough.
func (at *appendTx) deltaOf(raw []byte, objRow int64, kind kindKey, kf keyframe, haveKF bool) (bodyEncoding, bool) {
	if !haveKF {
		if objRow == 0 {
			return bodyEncoding{}, false
		}
		kindKF, ok := at.kindKeyframes[kind]
		if !ok {
			kindKF, ok = at.s.kindKeyframes[kind]
		}
		if !ok {
			return bodyEncoding{}, false
		}
		kf = keyframe{bodyID: kindKF.bodyID, raw: kindKF.raw}
	}
	delta := encodeDelta(kf.raw, raw)
	if len(delta) > len(raw)/8 {
		return bodyEncoding{}, false
	}
	return bodyEncoding{base: kf.bodyID, data: delta, kf: kf}, true
}

// bodyKey is a body of the batch: its object's row id (0 for none) and
// its hash. A body is its object's (schema version 6): another object's
// alike body is stored again.
type bodyKey struct {
	obj  int64
	hash string
}

// queueBody queues a new body row of object objRow under the next body
// id, which it returns.
func (at *appendTx) queueBody(raw []byte, hashHex string, objRow int64, enc bodyEncoding) int64 {
	hash, _ := hex.DecodeString(hashHex)
	id := at.nextBodyID
	at.nextBodyID++
	at.knownBodies[bodyKey{objRow, hashHex}] = id
	at.bodyRows = append(at.bodyRows, []any{objRow, id, hash, len(raw), enc.base, enc.data})
	at.bodies++
	at.bodyBytes += int64(len(enc.data))
	at.rawBodyByte += int64(len(raw))
	return id
}

// keyframe finds the keyframe of an object's latest body.
func (at *appendTx) keyframe(objRow int64) (keyframe, bool, error) {
	if kf, ok := at.keyframes[objRow]; ok {
		return kf, true, nil
	}
	if at.newObjects[objRow] {
		// No body of a new object is stored yet.
		return keyframe{}, false, nil
	}
	kf, ok := at.s.keyframes.get(objRow)
	if !ok {
		var latestID int64
		switch err := at.stmts.latestBody.QueryRowContext(at.ctx, objRow).Scan(&latestID); {
		case errors.Is(err, sql.ErrNoRows):
			return keyframe{}, false, nil
		case err != nil:
			return keyframe{}, false, fmt.Errorf("latest body: %w", err)
		}
		var rawLen int
		var base sql.NullInt64
		var data, latestHash []byte
		if err := at.stmts.objectBodyRow.QueryRowContext(at.ctx, objRow, latestID).Scan(&rawLen, &base, &data, &latestHash); err != nil {
			return keyframe{}, false, fmt.Errorf("latest body %d: %w", latestID, err)
		}
		kf = keyframe{bodyID: latestID, lastHash: hex.EncodeToString(latestHash), lastBodyID: latestID}
		if base.Valid {
			kf.bodyID = base.Int64
		}
	}
	raw, err := at.keyframeRaw(kf.bodyID)
	if err != nil {
		return keyframe{}, false, err
	}
	kf.raw = raw
	at.keyframes[objRow] = kf
	return kf, true, nil
}

// keyframeRaw returns the decoded keyframe with the given body id.
func (at *appendTx) keyframeRaw(bodyID int64) ([]byte, error) {
	if raw, ok := at.s.keyframeRaw.get(bodyID); ok {
		return raw, nil
	}
	var rawLen int
	var base sql.NullInt64
	var data, hash []byte
	if err := at.stmts.bodyRow.QueryRowContext(at.ctx, bodyID).Scan(&rawLen, &base, &data, &hash); err != nil {
		return nil, fmt.Errorf("keyframe %d: %w", bodyID, err)
	}
	if base.Valid {
		return nil, fmt.Errorf("%w: keyframe %d is a delta", errCorruptBody, bodyID)
	}
	raw, err := inflateKeyframe(data, rawLen)
	if err != nil {
		return nil, fmt.Errorf("keyframe %d: %w", bodyID, err)
	}
	return raw, nil
}
