package repo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"
)

// StockReset says what else `shop stock set` resets besides the stock.
type StockReset struct {
	// ClearOrders deletes the goods' order rows, so that a load test starts
	// from zero.
	ClearOrders bool
	// ResetFence sets the row's fencing token back to 0. Needed when
	// ZooKeeper's data was wiped (its zxids, the tokens, start again from
	// low values); unsafe while an old lock holder may still be writing.
	ResetFence bool
	// SaleStart and SaleEnd, when set, change the sale window; a zero time
	// in them opens that side (NULL).
	SaleStart, SaleEnd *time.Time
}

// SetStock sets the stock of goodsNo, creating an active row when there is
// none, and resets what r asks for. Chosen as a deadlock's victim (its
// delete of order rows takes gap locks that a concurrent insert may need),
// it was rolled back and runs again, a few times.
func (s *Store) SetStock(ctx context.Context, goodsNo, stock int32, r StockReset) error {
	for attempt := 0; ; attempt++ {
		err := s.setStock(ctx, goodsNo, stock, r)
		var me *mysql.MySQLError
		if attempt < 3 && errors.As(err, &me) && me.Number == erLockDeadlock {
			continue
		}
		if errors.Is(err, ErrEmptyWindow) {
			return err
		}
		return translate(err)
	}
}

func (s *Store) setStock(ctx context.Context, goodsNo, stock int32, r StockReset) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		set := map[string]any{"stock": stock}
		if r.ResetFence {
			set["fence"] = 0
		}
		for col, t := range map[string]*time.Time{"sale_start": r.SaleStart, "sale_end": r.SaleEnd} {
			switch {
			case t == nil:
			case t.IsZero():
				set[col] = nil
			default:
				set[col] = t.UTC()
			}
		}
		res := tx.Model(&goodsStock{}).Where("goods_no = ?", goodsNo).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			active := int16(1)
			row := goodsStock{GoodsNo: goodsNo, Stock: &stock, IsActive: &active}
			if r.SaleStart != nil && !r.SaleStart.IsZero() {
				row.SaleStart = r.SaleStart
			}
			if r.SaleEnd != nil && !r.SaleEnd.IsZero() {
				row.SaleEnd = r.SaleEnd
			}
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
		}
		var w goodsStock
		if err := tx.Select("sale_start", "sale_end").Where("goods_no = ?", goodsNo).Order("id").Take(&w).Error; err != nil {
			return err
		}
		if w.SaleStart != nil && w.SaleEnd != nil && !w.SaleEnd.After(*w.SaleStart) {
			return fmt.Errorf("%w: it would end at %s, not after its start at %s", ErrEmptyWindow,
				w.SaleEnd.UTC().Format(time.RFC3339), w.SaleStart.UTC().Format(time.RFC3339))
		}
		if r.ClearOrders {
			return tx.Where("goods_no = ?", goodsNo).Delete(&orderInfo{}).Error
		}
		return nil
	})
}

// ErrEmptyWindow: SetStock was asked for a sale window that ends before it
// starts (with the bound it left as it was); nothing was changed.
var ErrEmptyWindow = errors.New("the sale window would be empty")

// CountOrders counts the order rows of goodsNo.
func (s *Store) CountOrders(ctx context.Context, goodsNo int32) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&orderInfo{}).Where("goods_no = ?", goodsNo).Count(&n).Error
	return n, translate(err)
}
