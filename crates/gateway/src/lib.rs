//! trawl-gateway
