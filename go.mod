module github.com/seckill-zk/seckill-zk

go 1.26.8

require (
	github.com/go-sql-driver/mysql v1.10.1
	github.com/go-zookeeper/zk v1.0.4
	github.com/google/uuid v1.6.0
)

require filippo.io/edwards25519 v1.2.0 // indirect
