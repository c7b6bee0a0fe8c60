package repo

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// buyerKey is the unique key of one order per goods and buyer (schema
// version 5); MySQL names it in a duplicate entry's message.
const buyerKey = "uk_order_info_goods_buyer"

// MySQL error numbers the store translates.
const (
	erDupEntry           = 1062
	erLockWaitTimeout    = 1205
	erLockDeadlock       = 1213
	erTooManyConnections = 1040
	erAccessDenied       = 1045
	erBadDB              = 1049
	erServerShutdown     = 1053
	erUnknownComError    = 1047 // a Galera node that is not ready: "WSREP has not yet prepared node for application use"
	erErrorDuringCommit  = 1180 // a Galera node out of the Primary Component, at a write or a commit
)

// translate turns driver and GORM errors into the service's sentinel errors,
// keeping the original in the chain.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return service.ErrNotFound
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // the caller's own deadline, not an unreachable server (DeadlineExceeded is a net.Error too)
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDupEntry:
			if strings.Contains(me.Message, buyerKey) {
				return fmt.Errorf("%w: %w", service.ErrAlreadyBought, err)
			}
			return fmt.Errorf("%w: %w", service.ErrDuplicateRequest, err)
		case erLockDeadlock:
			return fmt.Errorf("%w: mysql: %w", service.ErrConflict, err)
		case erLockWaitTimeout, erUnknownComError, erTooManyConnections, erAccessDenied, erBadDB, erServerShutdown:
			return fmt.Errorf("%w: mysql: %w", service.ErrUnavailable, err)
		case erErrorDuringCommit:
			if notPrimary(err) {
				return fmt.Errorf("%w: mysql: %w", service.ErrUnavailable, err)
			}
		}
		return err
	}
	if connBroken(err) {
		return fmt.Errorf("%w: mysql: %w", service.ErrUnavailable, err)
	}
	return err
}

// connBroken: err is the network's or a broken connection's, not the
// server's answer.
func connBroken(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}
