package repo

import (
	"context"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The waiting room's shared state (service.RoomStore, schema version 10):
// its key, each goods' horizon, the instances serving it. Small statements
// on the read pool, a few a second per instance.

// RoomKey returns the key places are signed with, storing fresh when no
// instance has stored one: the first instance's key is everyone's.
func (s *Store) RoomKey(ctx context.Context, fresh []byte) ([]byte, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT IGNORE INTO room_key (id, k) VALUES (1, ?)", fresh).Error; err != nil {
		return nil, translate(err)
	}
	var key []byte
	if err := db.Raw("SELECT k FROM room_key WHERE id = 1").Row().Scan(&key); err != nil {
		return nil, translate(err)
	}
	return key, nil
}

// horizonsQuery reads the open rooms by the index idx_room_horizon_open
// (schema version 12); Horizons adds the goods asked for by primary key.
const horizonsQuery = "SELECT goods_no, horizon, latest FROM room_horizon WHERE is_open = 1"

// Horizons reads the rooms of goods and of every goods whose queue is open
// (latest beyond horizon); a goods without a room is missing. One read a
// tick (twenty a second) per instance, of the open rows alone (by the
// index) and the goods asked for: the closed rooms ForgetRooms has not
// deleted yet cost it nothing.
func (s *Store) Horizons(ctx context.Context, goods []int32) (map[int32]service.RoomMark, error) {
	out := make(map[int32]service.RoomMark, len(goods))
	q, args := horizonsQuery, []any{}
	if len(goods) > 0 {
		q, args = q+" OR goods_no IN ?", []any{goods}
	}
	rows, err := s.db.WithContext(ctx).Raw(q, args...).Rows()
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	for rows.Next() {
		var g int32
		var m service.RoomMark
		if err := rows.Scan(&g, &m.Horizon, &m.Latest); err != nil {
			return nil, translate(err)
		}
		out[g] = m
	}
	return out, translate(rows.Err())
}

// AdvanceRoom moves a goods' horizon and latest place to m's, where those
// are later: one statement, so that instances moving them at once never
// move them back.
func (s *Store) AdvanceRoom(ctx context.Context, goodsNo int32, m service.RoomMark) error {
	return translate(s.db.WithContext(ctx).Exec("INSERT INTO room_horizon (goods_no, horizon, latest) VALUES (?, ?, ?) "+
		"ON DUPLICATE KEY UPDATE horizon = GREATEST(horizon, VALUES(horizon)), latest = GREATEST(latest, VALUES(latest))",
		goodsNo, m.Horizon, m.Latest).Error)
}

// ForgetRooms deletes the rooms whose every place was let in and whose
// latest place is before before (microseconds since 1970), a bounded
// number a call: the rows of goods whose queues closed long ago, which
// would otherwise stay. By the index idx_room_horizon_open, once a minute
// per instance.
func (s *Store) ForgetRooms(ctx context.Context, before int64) (int64, error) {
	res := s.db.WithContext(ctx).Exec("DELETE FROM room_horizon WHERE is_open = 0 AND latest < ? LIMIT 10000", before)
	return res.RowsAffected, translate(res.Error)
}

// RoomMembers records member as seen now and counts the members seen
// within the last within (the database's clock for both).
func (s *Store) RoomMembers(ctx context.Context, member string, within time.Duration) (int, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT INTO room_member (id, seen_at) VALUES (?, NOW(6)) ON DUPLICATE KEY UPDATE seen_at = NOW(6)", member).Error; err != nil {
		return 0, translate(err)
	}
	return s.RoomInstances(ctx, within)
}

// RoomInstances counts the instances that said they serve the room within
// the last within (stock set asks whether any instance runs).
func (s *Store) RoomInstances(ctx context.Context, within time.Duration) (int, error) {
	var n int
	err := s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM room_member WHERE seen_at > NOW(6) - INTERVAL ? MICROSECOND", within.Microseconds()).Row().Scan(&n)
	return n, translate(err)
}

var _ service.RoomStore = (*Store)(nil)
