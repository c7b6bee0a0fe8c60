-- Version 10: the waiting room (room.enabled). A buyer the shop cannot serve now gets a place:
-- its arrival time, signed with room_key's key (made by the first instance that starts, kept
-- here so that every instance signs and checks places alike), carried by the buyer (a cookie,
-- or the X-Place header). room_horizon holds, per goods, the time up to which places are let
-- in (microseconds since 1970), moved forward only (GREATEST) by the instances at the rate
-- they sell, and the latest place any instance gave: the queue is empty when the horizon
-- has reached it. room_member lists the instances serving the room, each seen every second: how
-- many share the queue.
CREATE TABLE IF NOT EXISTS room_key (
  id tinyint unsigned NOT NULL,
  k varbinary(64) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS room_horizon (
  goods_no int NOT NULL,
  horizon bigint NOT NULL,
  latest bigint NOT NULL,
  PRIMARY KEY (goods_no)
) ENGINE=InnoDB;

CREATE TABLE IF NOT EXISTS room_member (
  id varchar(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  seen_at datetime(6) NOT NULL,
  PRIMARY KEY (id)
) ENGINE=InnoDB;
