package repo

import (
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// goodsStock maps the seed's goods_stock table.
type goodsStock struct {
	ID        uint32     `gorm:"column:id;primaryKey"`
	GoodsNo   int32      `gorm:"column:goods_no"`
	Stock     *int32     `gorm:"column:stock"`
	IsActive  *int16     `gorm:"column:isActive"`
	Fence     int64      `gorm:"column:fence"`
	SaleStart *time.Time `gorm:"column:sale_start"`
	SaleEnd   *time.Time `gorm:"column:sale_end"`
}

func (goodsStock) TableName() string { return "goods_stock" }

// orderInfo maps order_info.
type orderInfo struct {
	ID        uint64     `gorm:"column:id;primaryKey"`
	GoodsNo   int32      `gorm:"column:goods_no"`
	RequestID string     `gorm:"column:request_id"`
	UserID    *string    `gorm:"column:user_id"`
	Limited   bool       `gorm:"column:buyer_limited"` // one order per goods and buyer (the unique key)
	Status    string     `gorm:"column:status"`
	CreatedAt time.Time  `gorm:"column:created_at"`
	PaidAt    *time.Time `gorm:"column:paid_at"`
	ExpiredAt *time.Time `gorm:"column:expired_at"`
}

// insertOrderSQL inserts order rows: one orderValuesSQL per row, with the
// arguments appendInsertArgs gives. insertNewSQL inserts rows that
// isPlainNew says are new orders without a buyer, one newValuesSQL per row
// with the arguments appendNewArgs gives: their user_id, buyer_limited and
// status are the columns' defaults (NULL, 0 and 'unpaid'), and MariaDB does
// not parse, convert and store three values a row for them (78 rows: about
// 50-100 us of its CPU less on this machine, a tenth of the INSERT's).
const (
	insertOrderSQL = "INSERT INTO order_info (goods_no, request_id, user_id, buyer_limited, status, created_at) VALUES "
	orderValuesSQL = "(?, ?, ?, ?, ?, ?)"
	insertNewSQL   = "INSERT INTO order_info (goods_no, request_id, created_at) VALUES "
	newValuesSQL   = "(?, ?, ?)"
)

// appendInsertArgs appends the row's values in orderValuesSQL's order.
func (r *orderInfo) appendInsertArgs(args []any) []any {
	return append(args, r.GoodsNo, r.RequestID, r.UserID, r.Limited, r.Status, r.CreatedAt)
}

// isPlainNew reports whether the row is a new order without a buyer: what
// insertNewSQL writes.
func (r *orderInfo) isPlainNew() bool {
	return r.UserID == nil && !r.Limited && r.Status == service.OrderUnpaid
}

// appendNewArgs appends the values of a row that isPlainNew in
// newValuesSQL's order.
func (r *orderInfo) appendNewArgs(args []any) []any {
	return append(args, r.GoodsNo, r.RequestID, r.CreatedAt)
}

// newOrderRow is the row of a new order: unpaid.
func newOrderRow(o *service.Order, now time.Time) orderInfo {
	r := orderInfo{GoodsNo: o.GoodsNo, RequestID: o.RequestID, Status: service.OrderUnpaid, CreatedAt: now}
	if o.UserID != "" {
		r.UserID, r.Limited = &o.UserID, o.OnePerBuyer
	}
	return r
}

// fill tells the buyer's order what its row was given: the id, the status
// and the time it was placed.
func (r *orderInfo) fill(o *service.Order) {
	o.ID, o.Status, o.CreatedAt = r.ID, r.Status, r.CreatedAt
}

func (r orderInfo) order() service.Order {
	o := service.Order{ID: r.ID, GoodsNo: r.GoodsNo, RequestID: r.RequestID, Status: r.Status, OnePerBuyer: r.Limited,
		CreatedAt: r.CreatedAt, PaidAt: r.PaidAt, ExpiredAt: r.ExpiredAt}
	if r.UserID != nil {
		o.UserID = *r.UserID
	}
	return o
}

func (orderInfo) TableName() string { return "order_info" }
