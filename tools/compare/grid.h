// Grid: rows of text cells printed either as an aligned terminal table or as
// a GitHub-flavoured markdown table. Single-threaded value type.
#ifndef SKIFF_COMPARE_GRID_H_
#define SKIFF_COMPARE_GRID_H_

#include <string>
#include <utility>
#include <vector>

namespace skiff::compare {

class Grid {
 public:
  explicit Grid(std::vector<std::string> header) : header_(std::move(header)) {}

  // Missing cells print empty; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }

  // Columns padded to their widest cell, separated by two spaces, with a
  // dashed rule under the header.
  std::string Plain() const;
  // "| a | b |" rows; '|' inside a cell is escaped.
  std::string Markdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace skiff::compare

#endif  // SKIFF_COMPARE_GRID_H_
