# layout_probe_lib.rb - a frame of layout_probe.rb's chain in a second
# file, loaded by its absolute path (its iseqs' path is a plain String,
# while the main script, run by a relative path, has [path, realpath]).
class Probe
  def middle_frame
    r = nil
    [1].each { 1.times { r = leaf_method } }
    r
  end
end
