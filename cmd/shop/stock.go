package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// goodsStock is one goods' new stock for `shop stock set`.
type goodsStock struct {
	goodsNo, stock int32
}

// setStock sets each goods' stock: one goods in one transaction; many in
// chunks of a few hundred a transaction, one chunk after the other (run
// side by side, row creations and order deletions take gap locks that
// deadlock with their neighbours'), with progress every few seconds; it
// stops at the first failure, or an interrupt, between chunks, and says
// which goods are set.
// seenWithin is how long a running instance may still answer from what it
// saw before a stock set: its sold-out marks (service.DefaultSoldOutFor;
// the waiting room's readings of what is left are trusted for less). stock
// set waits it out, so that the buyers who come once it returns are
// answered from the new stock: a crowd sent right after a restock that
// followed a sell-out bought 0, 60 and 100 of 100 in three runs, and 100
// of 100 in five once a second had passed.
const seenWithin = service.DefaultSoldOutFor

func setStock(ctx context.Context, cfg Config, log *slog.Logger, stocks []goodsStock, reset repo.StockReset, wait bool) error {
	store, err := openStore(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	if len(stocks) == 1 {
		if err := store.SetStock(ctx, stocks[0].goodsNo, stocks[0].stock, reset); err != nil {
			return err
		}
	} else {
		many := make([]repo.GoodsStock, len(stocks))
		for i, s := range stocks {
			many[i] = repo.GoodsStock{GoodsNo: s.goodsNo, Stock: s.stock}
		}
		start, last := time.Now(), time.Now()
		err := store.SetStocks(ctx, many, reset, func(n int) {
			if time.Since(last) >= 2*time.Second && n < len(many) {
				last = time.Now()
				log.Info("setting the stock", "done", n, "of", len(many), "elapsed", time.Since(start).Round(time.Second).String())
			}
		})
		if err != nil {
			return err
		}
	}
	attrs := []any{"ordersCleared", reset.ClearOrders, "fenceReset", reset.ResetFence,
		"saleStart", fmtWindow(reset.SaleStart), "saleEnd", fmtWindow(reset.SaleEnd)}
	if len(stocks) == 1 {
		log.Info("stock set", append([]any{"goodsNo", stocks[0].goodsNo, "stock", stocks[0].stock}, attrs...)...)
	} else {
		var total int64
		for _, s := range stocks {
			total += int64(s.stock)
		}
		log.Info("stock set", append([]any{"goods", len(stocks), "totalStock", total}, attrs...)...)
	}
	if !reset.ClearOrders {
		// A stock or a window changed within a sale: said, not waited for.
		log.Info("running instances see it within a second (they read their sold-out marks and sale windows again); with --clear-orders, a new sale, this command waits for them")
		return nil
	}
	if !wait {
		return nil
	}
	if cfg.Room.Enabled {
		// Instances with the waiting room on say every second that they
		// run: none said so lately, none answers from what it saw.
		if n, err := store.RoomInstances(ctx, 3*time.Second); err == nil && n == 0 {
			return nil
		}
	}
	select {
	case <-time.After(seenWithin):
	case <-ctx.Done():
		return ctx.Err()
	}
	log.Info("every running instance answers from the new stock now", "waited", seenWithin.String())
	return nil
}

// readStockFile reads a CSV file of goodsNo,stock lines; a first line that
// is not two numbers is a header.
func readStockFile(name string) ([]goodsStock, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = 2
	r.TrimLeadingSpace = true
	var out []goodsStock
	seen := map[int32]int{}
	for line := 1; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		g, gerr := strconv.ParseInt(rec[0], 10, 32)
		s, serr := strconv.ParseInt(rec[1], 10, 32)
		if line == 1 && (gerr != nil || serr != nil) {
			continue // a header
		}
		if gerr != nil || serr != nil || g <= 0 || s < 0 {
			return nil, fmt.Errorf("line %d: %q: want goodsNo (> 0),stock (≥ 0)", line, strings.Join(rec, ","))
		}
		if prev, dup := seen[int32(g)]; dup {
			return nil, fmt.Errorf("line %d: goods %d again (first on line %d)", line, g, prev)
		}
		seen[int32(g)] = line
		out = append(out, goodsStock{int32(g), int32(s)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no goods", name)
	}
	if len(out) > api.MaxGoodsSet {
		return nil, fmt.Errorf("%s: more than %d goods", name, api.MaxGoodsSet)
	}
	return out, nil
}

// stockSetCommand is `shop stock set`.
func stockSetCommand(load func(*cobra.Command) (Config, *slog.Logger, error)) *cobra.Command {
	var stock int32
	var goods, file string
	var reset repo.StockReset
	var saleStart, saleEnd string
	var maxGoods int
	var noWait bool
	cmd := &cobra.Command{
		Use:   "set --goods N --stock M | --file goods.csv",
		Short: "Set the stock of one goods or many (e.g. between load tests), creating rows if needed",
		Example: `  shop stock set --goods 1 --stock 100 --clear-orders
  shop stock set --goods 1-200 --stock 50 --clear-orders   # a sale of many goods
  shop stock set --file goods.csv                          # lines of goodsNo,stock
  shop stock set --goods 1 --stock 100 --start +30s --end +5m
  shop stock set --goods 1 --stock 100 --start none --end none   # open the window again`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var stocks []goodsStock
			switch {
			case file != "" && (cmd.Flags().Changed("goods") || cmd.Flags().Changed("stock")):
				return fmt.Errorf("%w: stock set takes --file or --goods and --stock, not both", errUsage)
			case file != "":
				var err error
				if stocks, err = readStockFile(file); err != nil {
					return fmt.Errorf("%w: --file: %w", errUsage, err)
				}
			default:
				set, err := api.ParseGoodsSetMax(goods, maxGoods)
				switch {
				case err != nil && strings.Contains(err.Error(), "more than"):
					return fmt.Errorf("%w: --goods: %w (--max-goods raises the bound)", errUsage, err)
				case err != nil:
					return fmt.Errorf("%w: --goods: %w", errUsage, err)
				case !cmd.Flags().Changed("stock"):
					return fmt.Errorf("%w: stock set needs --stock M (the new stock of each goods, ≥ 0), or --file", errUsage)
				case stock < 0:
					return fmt.Errorf("%w: --stock %d: a stock is 0 or more", errUsage, stock)
				}
				for _, g := range set {
					stocks = append(stocks, goodsStock{g, stock})
				}
			}
			now := time.Now() // one now for both: +10m and +10m are the same time
			for _, w := range []struct {
				flag, value string
				into        **time.Time
			}{{"--start", saleStart, &reset.SaleStart}, {"--end", saleEnd, &reset.SaleEnd}} {
				t, err := parseSaleTime(w.value, now)
				if err != nil {
					return fmt.Errorf("%w: %s: %w", errUsage, w.flag, err)
				}
				*w.into = t
			}
			cfg, log, err := load(cmd)
			if err != nil {
				return err
			}
			if err := setStock(cmd.Context(), cfg, log, stocks, reset, !noWait); errors.Is(err, repo.ErrEmptyWindow) {
				return fmt.Errorf("%w: --start/--end: %w", errUsage, err)
			} else if err != nil {
				return err
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&goods, "goods", "1", "goods: a number, a range (1-200) or a list (1-10,42)")
	fs.IntVar(&maxGoods, "max-goods", api.MaxGoodsSet, "the most goods one --goods may name (a mistyped range stops here)")
	fs.BoolVar(&noWait, "no-wait", false, "with --clear-orders (a new sale): return once the rows are written, without waiting the second in which running instances may still answer from what they saw (sold-out marks)")
	fs.Int32Var(&stock, "stock", 0, "new stock of each goods, ≥ 0 (required with --goods)")
	fs.StringVar(&file, "file", "", "a CSV file of goodsNo,stock lines (a header line is allowed) instead of --goods and --stock")
	fs.BoolVar(&reset.ClearOrders, "clear-orders", false, "also delete the goods' order rows")
	fs.BoolVar(&reset.ResetFence, "reset-fence", false, "also set the row's fencing token to 0 (after ZooKeeper's data was wiped; never during a sale)")
	fs.StringVar(&saleStart, "start", "", "sale start: RFC 3339 (2026-11-23T10:00:00+08:00), +DURATION from now (+30s), or none (open); default: unchanged")
	fs.StringVar(&saleEnd, "end", "", "sale end: RFC 3339, +DURATION from now, or none (open); default: unchanged")
	configFlags(fs, "mysql.dsn", "log.")
	return cmd
}

// stockListCommand is `shop stock list`: every goods' row, a line each.
func stockListCommand(load func(*cobra.Command) (Config, *slog.Logger, error), stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the goods: number, stock, active, sale window",
		Example: "  shop stock list",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			store, err := storeFor(cmd, load)
			if err != nil {
				return err
			}
			defer store.Close()
			w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "goods\tstock\tactive\tsale start\tsale end")
			for after := int32(0); ; {
				page, err := store.ListGoods(cmd.Context(), after, 1000)
				if err != nil {
					return err
				}
				for _, g := range page {
					fmt.Fprintf(w, "%d\t%d\t%v\t%s\t%s\n", g.GoodsNo, g.Stock, g.IsActive != 0, windowCell(g.SaleStart), windowCell(g.SaleEnd))
				}
				if len(page) < 1000 {
					return w.Flush()
				}
				after = page[len(page)-1].GoodsNo
			}
		},
	}
	configFlags(cmd.Flags(), "mysql.dsn", "log.")
	return cmd
}

// stockRemoveCommand is `shop stock remove --goods SET`: the goods' rows
// and their orders deleted (test data, a demo's goods).
func stockRemoveCommand(load func(*cobra.Command) (Config, *slog.Logger, error), stdout io.Writer) *cobra.Command {
	var goods string
	var withOrders bool
	cmd := &cobra.Command{
		Use:     "remove --goods N|N-M|LIST [--with-orders]",
		Short:   "Remove goods (test data: they leave the dashboard and GET /goods); goods with orders only with --with-orders",
		Example: "  shop stock remove --goods 2-200 --with-orders",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("goods") {
				return fmt.Errorf("%w: stock remove needs --goods N, a range N-M or a list", errUsage)
			}
			set, err := api.ParseGoodsSet(goods)
			if err != nil {
				return fmt.Errorf("%w: --goods: %w", errUsage, err)
			}
			store, err := storeFor(cmd, load)
			if err != nil {
				return err
			}
			defer store.Close()
			n, err := store.RemoveGoods(cmd.Context(), set, withOrders)
			if errors.Is(err, repo.ErrGoodsHaveOrders) {
				return fmt.Errorf("%w (nothing removed): their orders would go with them; say so with --with-orders", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "removed %d goods rows of the %d goods asked for%s\n", n, len(set), map[bool]string{true: ", with their orders"}[withOrders])
			return nil
		},
	}
	cmd.Flags().StringVar(&goods, "goods", "", "goods to remove: a number, a range (2-200) or a list (2-10,42)")
	cmd.Flags().BoolVar(&withOrders, "with-orders", false, "remove goods that have orders, and their orders")
	configFlags(cmd.Flags(), "mysql.dsn", "log.")
	return cmd
}

// windowCell is a bound of a row's sale window: open (NULL) or the time.
func windowCell(t *time.Time) string {
	if t == nil {
		return "open"
	}
	return t.UTC().Format(time.RFC3339)
}

// storeFor loads cmd's configuration and opens the store it names.
func storeFor(cmd *cobra.Command, load func(*cobra.Command) (Config, *slog.Logger, error)) (*repo.Store, error) {
	cfg, _, err := load(cmd)
	if err != nil {
		return nil, err
	}
	return openStore(cmd.Context(), cfg, nil)
}

// parseSaleTime reads a sale window bound: "" leaves it as it is (nil),
// "none" opens it (the zero time), else RFC 3339 or +DURATION from now.
func parseSaleTime(v string, now time.Time) (*time.Time, error) {
	switch {
	case v == "":
		return nil, nil
	case v == "none":
		return &time.Time{}, nil
	case strings.HasPrefix(v, "+"):
		d, err := time.ParseDuration(v[1:])
		if err != nil {
			return nil, fmt.Errorf("%q is not +DURATION (+30s, +2h): %w", v, err)
		}
		t := now.Add(d)
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%q is not an RFC 3339 time (2026-11-23T10:00:00+08:00), +DURATION or none", v)
	}
	return &t, nil
}

func fmtWindow(t *time.Time) string {
	switch {
	case t == nil:
		return "unchanged"
	case t.IsZero():
		return "open"
	}
	return t.UTC().Format(time.RFC3339)
}
