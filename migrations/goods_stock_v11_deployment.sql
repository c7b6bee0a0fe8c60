-- Version 11: the deployment's identity. One random id, made here once, when the database is
-- first migrated, and kept: the shop stamps its ZooKeeper paths with it (not with the
-- database's name, which two deployments on two servers may share), and an instance that finds
-- its paths stamped by another deployment refuses to start and says which.
CREATE TABLE IF NOT EXISTS deployment (
  id tinyint unsigned NOT NULL,
  identity char(36) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  created_at datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  PRIMARY KEY (id)
) ENGINE=InnoDB;

INSERT IGNORE INTO deployment (id, identity) VALUES (1, UUID());
