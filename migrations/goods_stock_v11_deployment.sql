-- Version 11: the deployment's identity. One random id, made here once, when the database is
-- first migrated, and kept: the shop stamps its ZooKeeper paths with it (not with the
-- database's name, which two deployments on two servers may share), and an instance that finds
-- its paths stamped by another deployment refuses to start and says which. zk_paths are the
-- ZooKeeper paths the database is sold and swept under (its election's path, which a namespace
-- moves with the lock path, as the last instance to claim it wrote it): an instance with other paths, while instances queue
-- in the recorded election, refuses to start (two sets of locks on one database).
CREATE TABLE IF NOT EXISTS deployment (
  id tinyint unsigned NOT NULL,
  identity char(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  zk_paths varchar(2048) CHARACTER SET utf8mb4 NOT NULL DEFAULT '',
  created_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id)
) ENGINE=InnoDB;

INSERT IGNORE INTO deployment (id, identity) VALUES (1, UUID());
