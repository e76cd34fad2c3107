#include "support/cluster_owner.h"

#include <pqxx/pqxx>

#include "server/cluster/partition.h"

namespace skiff::support {

Result<uint16_t> ClusterOwnerPort(const std::string& url, const std::string& table,
                                  const std::string& key) {
  try {
    pqxx::connection conn(url);
    pqxx::nontransaction tx(conn);
    pqxx::result r = tx.exec_params(
        "SELECT i.address FROM skiff_partitions p JOIN skiff_cluster_instances i ON i.id = "
        "p.owner WHERE p.partition = $1",
        static_cast<int>(server::cluster::PartitionOf(table, key)));
    if (r.empty()) return uint16_t{0};
    const std::string address = r[0][0].c_str();
    return static_cast<uint16_t>(std::stoi(address.substr(address.rfind(':') + 1)));
  } catch (const std::exception& e) {
    return Unavailable(std::string("reading the partition table: ") + e.what());
  }
}

}  // namespace skiff::support
