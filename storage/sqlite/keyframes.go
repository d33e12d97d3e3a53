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
	id, stored := at.knownBodies[hashHex]
	if !stored {
		var base any
		var data []byte
		if haveKF {
			if delta := encodeDelta(kf.raw, raw); len(delta) <= len(raw)/8 {
				base, data = kf.bodyID, delta
			}
		} else if objRow != 0 {
			// A new object: try the latest keyframe of its kind.
			kindKF, ok := at.kindKeyframes[kind]
			if !ok {
				kindKF, ok = at.s.kindKeyframes[kind]
			}
			if ok {
				if delta := encodeDelta(kindKF.raw, raw); len(delta) <= len(raw)/8 {
					base, data = kindKF.bodyID, delta
					kf, haveKF = keyframe{bodyID: kindKF.bodyID, raw: kindKF.raw}, true
				}
			}
		}
		if data == nil {
			var err error
			if data, err = deflateKeyframe(raw); err != nil {
				return 0, fmt.Errorf("compress body: %w", err)
			}
		}
		hash, _ := hex.DecodeString(hashHex)
		id = at.nextBodyID
		at.nextBodyID++
		at.knownBodies[hashHex] = id
		at.bodyRows = append(at.bodyRows, []any{id, keyOf(hash), hash, len(raw), base, data})
		at.bodies++
		at.bodyBytes += int64(len(data))
		at.rawBodyByte += int64(len(raw))
		if base == nil && objRow != 0 {
			kf = keyframe{bodyID: id, raw: raw}
			haveKF = true
			at.kindKeyframes[kind] = kf
		}
	}
	if objRow != 0 && haveKF {
		kf.lastHash, kf.lastBodyID = hashHex, id
		at.keyframes[objRow] = kf
	}
	return id, nil
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
		if err := at.stmts.bodyRow.QueryRowContext(at.ctx, latestID).Scan(&rawLen, &base, &data, &latestHash); err != nil {
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
