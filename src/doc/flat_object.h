// FlatObject: the member container of a document object, as nlohmann's
// ObjectType. Members sit in one vector sorted by key, so an object costs one
// allocation and 48 bytes per member, where std::map costs a node of 80 bytes
// plus the allocator's header for every member. Lookups are a binary search;
// iteration order is the key order std::map gave, so the JSON text and the
// packed form of every document stay the same byte for byte.
//
// Inserting one key in the middle moves the members after it. Whoever builds
// an object from input of unbounded size (the parser, the packed-form reader,
// merge, a range insert) gathers the members and sorts them once, and only
// when they are out of order; one insert at a time is for code that adds a
// bounded number of keys. Inserting keys in ascending order is constant time.
//
// Unlike std::map, an insert may move every member of the object: a reference
// or iterator to a member is invalid after an insert into the same object.
// nlohmann's update() and merge_patch() with an argument that lives inside
// `*this` rely on std::map's stability and must not be called that way, and
// JSON_DIAGNOSTICS (parent pointers into the members) must stay off.
#ifndef SKIFF_DOC_FLAT_OBJECT_H_
#define SKIFF_DOC_FLAT_OBJECT_H_

#include <algorithm>
#include <compare>
#include <cstddef>
#include <functional>
#include <initializer_list>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace skiff::doc {

// The last two parameters are the comparator and allocator nlohmann passes to
// every ObjectType; the order is always the key's operator< and the allocator
// the standard one.
template <class Key, class T, class IgnoredCompare = void, class IgnoredAllocator = void>
class FlatObject {
 public:
  using key_type = Key;
  using mapped_type = T;
  using value_type = std::pair<Key, T>;
  using Members = std::vector<value_type>;
  using size_type = typename Members::size_type;
  using difference_type = typename Members::difference_type;
  using reference = value_type&;
  using const_reference = const value_type&;
  using iterator = typename Members::iterator;
  using const_iterator = typename Members::const_iterator;
  // Transparent, so nlohmann looks keys up as string_view or const char*
  // without building a std::string.
  using key_compare = std::less<>;

  FlatObject() = default;
  template <class InputIt>
  FlatObject(InputIt first, InputIt last) {
    insert(first, last);
  }
  FlatObject(std::initializer_list<value_type> members) { insert(members.begin(), members.end()); }

  // Takes `members` in any order. Where a key repeats, the last one stays, as
  // when each member is assigned in turn.
  static FlatObject FromMembers(Members members) {
    SortAndKeep(members, Keep::kLast);
    FlatObject object;
    object.members_ = std::move(members);
    return object;
  }

  iterator begin() noexcept { return members_.begin(); }
  iterator end() noexcept { return members_.end(); }
  const_iterator begin() const noexcept { return members_.begin(); }
  const_iterator end() const noexcept { return members_.end(); }
  const_iterator cbegin() const noexcept { return members_.cbegin(); }
  const_iterator cend() const noexcept { return members_.cend(); }
  bool empty() const noexcept { return members_.empty(); }
  size_type size() const noexcept { return members_.size(); }
  size_type max_size() const noexcept { return members_.max_size(); }
  void clear() noexcept { members_.clear(); }
  void reserve(size_type n) { members_.reserve(n); }
  size_type capacity() const noexcept { return members_.capacity(); }

  template <class K>
  iterator find(const K& key) {
    const iterator at = LowerBound(key);
    return at != end() && at->first == key ? at : end();
  }
  template <class K>
  const_iterator find(const K& key) const {
    const const_iterator at = LowerBound(key);
    return at != end() && at->first == key ? at : end();
  }
  template <class K>
  size_type count(const K& key) const {
    return find(key) != end() ? 1 : 0;
  }

  // Like std::map::emplace: constructs the value only when `key` is new.
  template <class K, class... Args>
  std::pair<iterator, bool> emplace(K&& key, Args&&... args) {
    if (members_.empty() || members_.back().first < key) {
      members_.emplace_back(std::piecewise_construct, std::forward_as_tuple(std::forward<K>(key)),
                            std::forward_as_tuple(std::forward<Args>(args)...));
      return {end() - 1, true};
    }
    const iterator at = LowerBound(key);
    if (at != end() && at->first == key) return {at, false};
    return {
        members_.emplace(at, std::piecewise_construct, std::forward_as_tuple(std::forward<K>(key)),
                         std::forward_as_tuple(std::forward<Args>(args)...)),
        true};
  }
  std::pair<iterator, bool> insert(const value_type& member) {
    return emplace(member.first, member.second);
  }
  std::pair<iterator, bool> insert(value_type&& member) {
    return emplace(std::move(member.first), std::move(member.second));
  }
  // Like std::map's range insert: a key already present keeps its value, and
  // of a key repeated in the range the first stays. Sorts the range once.
  template <class InputIt>
  void insert(InputIt first, InputIt last) {
    Members added;
    for (; first != last; ++first) added.emplace_back(first->first, first->second);
    SortAndKeep(added, Keep::kFirst);
    if (members_.empty()) {
      members_ = std::move(added);
      return;
    }
    Members merged;
    merged.reserve(members_.size() + added.size());
    auto have = members_.begin();
    for (value_type& m : added) {
      for (; have != members_.end() && have->first < m.first; ++have) {
        merged.push_back(std::move(*have));
      }
      if (have == members_.end() || m.first < have->first) merged.push_back(std::move(m));
    }
    for (; have != members_.end(); ++have) merged.push_back(std::move(*have));
    members_ = std::move(merged);
  }

  template <class K>
  T& operator[](K&& key) {
    return emplace(std::forward<K>(key)).first->second;
  }
  template <class K>
  const T& operator[](const K& key) const {
    return at(key);
  }
  template <class K>
  T& at(const K& key) {
    const iterator it = find(key);
    if (it == end()) throw std::out_of_range("key not found");
    return it->second;
  }
  template <class K>
  const T& at(const K& key) const {
    const const_iterator it = find(key);
    if (it == end()) throw std::out_of_range("key not found");
    return it->second;
  }

  iterator erase(const_iterator at) { return members_.erase(at); }
  iterator erase(const_iterator first, const_iterator last) { return members_.erase(first, last); }
  template <class K>
  requires(!std::is_convertible_v<const K&, const_iterator>) size_type erase(const K& key) {
    const const_iterator at = std::as_const(*this).find(key);
    if (at == end()) return 0;
    members_.erase(at);
    return 1;
  }

  void swap(FlatObject& other) noexcept { members_.swap(other.members_); }

  friend bool operator==(const FlatObject& a, const FlatObject& b) {
    return a.members_ == b.members_;
  }
  friend auto operator<=>(const FlatObject& a, const FlatObject& b) {
    return a.members_ <=> b.members_;
  }

 private:
  template <class K>
  iterator LowerBound(const K& key) {
    return std::lower_bound(begin(), end(), key,
                            [](const value_type& m, const K& k) { return m.first < k; });
  }
  template <class K>
  const_iterator LowerBound(const K& key) const {
    return std::lower_bound(begin(), end(), key,
                            [](const value_type& m, const K& k) { return m.first < k; });
  }

  enum class Keep { kFirst, kLast };

  // Sorts `members` by key and keeps one member per key. Leaves members that
  // are already strictly ascending (the usual case for text we wrote) as
  // they are, without allocating.
  static void SortAndKeep(Members& members, Keep keep) {
    if (std::adjacent_find(members.begin(), members.end(), [](const auto& a, const auto& b) {
          return !(a.first < b.first);
        }) == members.end()) {
      return;
    }
    std::stable_sort(members.begin(), members.end(),
                     [](const value_type& a, const value_type& b) { return a.first < b.first; });
    // stable_sort kept each run of equal keys in input order.
    auto out = members.begin();
    for (auto run = members.begin(); run != members.end();) {
      auto next = std::next(run);
      while (next != members.end() && next->first == run->first) ++next;
      auto kept = keep == Keep::kFirst ? run : std::prev(next);
      if (out != kept) *out = std::move(*kept);
      ++out;
      run = next;
    }
    if (out != members.end()) {
      members.erase(out, members.end());
      // Repeats can be most of a hostile input ({"a":0,"a":0,...}): do not
      // keep their room.
      members.shrink_to_fit();
    }
  }

  Members members_;
};

}  // namespace skiff::doc

#endif  // SKIFF_DOC_FLAT_OBJECT_H_
